"""The two ways a record can fail, as in every weir SDK, and the reason a
refused record is given."""

import os


class BadRecord(Exception):
    """This record is bad (malformed, fails validation): it is refused with
    this reason and the pipeline's ``on-error`` decides its fate (fail, skip
    or dead-letter). Processing goes on. Any other exception a function
    raises for a record is treated the same way, with the exception's type,
    message and place in the user's code as the reason."""


class Broken(Exception):
    """The transform cannot go on (a resource it needs is missing, an
    invariant broke): the pipeline stops with this message."""


# The project's directory: the SDK is its ``weir/`` package.
_SDK_DIR = os.path.dirname(os.path.abspath(__file__))
_PROJECT_DIR = os.path.dirname(_SDK_DIR)


def _where(e):
    """``FILE:LINE in FUNCTION`` of the innermost frame of ``e``'s traceback
    in the user's own code (under the project, outside the SDK), the file
    relative to the project; None when no frame is."""
    found = None
    tb = e.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.abspath(code.co_filename)
        if path.startswith(_PROJECT_DIR + os.sep) and not path.startswith(_SDK_DIR + os.sep):
            found = f"{os.path.relpath(path, _PROJECT_DIR)}:{tb.tb_lineno} in {code.co_name}"
        tb = tb.tb_next
    return found


def reason(e):
    """A refused record's reason: a ``BadRecord``'s own message; for any
    other exception its type, message and where in the user's code it was
    raised, as a traceback's last user frame would show it."""
    if isinstance(e, BadRecord):
        return str(e) or "bad record"
    where = _where(e)
    text = f"{type(e).__name__}: {e}"
    return f"{text} at {where}" if where else text
