"""The two ways a record can fail, as in every weir SDK."""


class BadRecord(Exception):
    """This record is bad (malformed, fails validation): it is refused with
    this reason and the pipeline's ``on-error`` decides its fate (fail, skip
    or dead-letter). Processing goes on. Any other exception a function
    raises for a record is treated the same way, with the exception's type
    and message as the reason."""


class Broken(Exception):
    """The transform cannot go on (a resource it needs is missing, an
    invariant broke): the pipeline stops with this message."""
