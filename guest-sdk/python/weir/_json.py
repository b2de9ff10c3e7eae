"""Reading one top-level member of a JSON record (``weir.json_field``).

Decoding a whole record with ``json.loads`` costs more than the rest of a
filter on one field. For the common shape, a flat object whose members up
to the one looked for are simple (a name without escapes; a number, a
string without escapes, true, false or null), a regular expression (C
speed) finds and reads the member instead: one match, compiled once per
name. Any other shape is decoded with ``json.loads``."""

import json
import re
from typing import Any, Dict, Optional

from ._errors import BadRecord

_MISSING = object()

_WS = rb"[ \t\r\n]*"
_NUMBER = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_STRING = rb'"[^"\\\x00-\x1f]*"'
# The members before the one looked for, each simple: a name without
# escapes, and a number, a string without escapes or a literal. Lazy, so
# the first member of the name is the one read.
_MEMBERS = (
    _WS + rb"\{(?:" + _WS + _STRING + _WS + rb":" + _WS
    + rb"(?:" + _NUMBER + rb"|" + _STRING + rb"|true|false|null)" + _WS + rb",)*?" + _WS
)
# The member's simple value, then where it ends. Groups: an integer part
# and a fraction or exponent; a string's body; a literal.
_VALUE = (
    _WS + rb":" + _WS
    + rb"(?:(-?(?:0|[1-9][0-9]*))((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    + rb'|"([^"\\\x00-\x1f]*)"|(true|false|null))'
    + _WS + rb"[,}]"
)
_LITERALS = {b"true": True, b"false": False, b"null": None}
_readers: Dict[str, Any] = {}


def json_field(value: Optional[bytes], name: str, default: Any = _MISSING) -> Any:
    """The top-level member ``name`` of the JSON object in ``value`` (bytes),
    as ``json.loads`` would give it (the first one if the name repeats).

    A missing member gives ``default``, or refuses the record when there is
    none; a value that is not a JSON object refuses the record
    (``BadRecord``). When the members up to it are simple (see the module)
    the bytes after the member are not read, so a record broken after it is
    not noticed; nor is bad UTF-8 in the strings before it."""
    reader = _readers.get(name)
    if reader is None:
        reader = _readers[name] = re.compile(_MEMBERS + re.escape(json.dumps(name).encode()) + _VALUE)
    if value is None:
        raise BadRecord("record has no value")
    m = reader.match(value)
    if m is not None:
        whole, fraction, text, literal = m.groups()
        if whole is not None:
            return float(whole + fraction) if fraction else int(whole)
        if text is None:
            return _LITERALS[literal]
        try:
            return text.decode()
        except UnicodeDecodeError:
            pass
    return _decoded(value, name, default)


def _first(pairs):
    """An object's members, the first of a repeated name kept (as the fast
    path does)."""
    d = {}
    for k, v in pairs:
        d.setdefault(k, v)
    return d


def _decoded(value, name, default):
    try:
        doc = json.loads(value, object_pairs_hook=_first)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRecord(f"not a JSON object: {e}") from None
    if not isinstance(doc, dict):
        raise BadRecord("not a JSON object")
    found = doc.get(name, _MISSING)
    if found is _MISSING:
        if default is _MISSING:
            raise BadRecord(f"missing field `{name}`")
        return default
    return found
