"""Stream-stream joins with the Rust SDK's semantics (``weir_guest::join``):
two sources of one pipeline joined on a key within an event-time range,
Spark's ``left.key = right.key AND right.ts BETWEEN left.ts - before AND
left.ts + after``, inner or outer.

Each row waits in keyed state until the watermark proves no row of the
other side can still match it, then leaves it; an outer join emits its
unmatched rows then (``None`` for the missing side). A pair is emitted
once, when its second row arrives. Outputs carry the join key and the later
of the two rows' event times (an unmatched row's own). Register a builder,
called with the config at init::

    @weir.joined
    def build(config):
        return joins.inner("orders", "payments", before_ms=0, after_ms=60_000,
                           key_by=lambda r: json.loads(r.value)["order_id"],
                           output=lambda j: ...)

``key_by`` is one function for both sides or a ``(left, right)`` pair;
``output(joined)`` returns the output value (bytes or str), ``joined``
having ``key`` (bytes), ``left`` and ``right`` (each a ``Row`` with
``value`` and ``timestamp``, or ``None``). Rows are stored in the same
layout as the Rust SDK's, so a pipeline can move between the two.
"""

import json

from . import _errors, state
from ._batch import Record
from ._errors import BadRecord, Broken
from .windows import _time, _untime  # the same time encoding in keys

INNER, LEFT_OUTER, RIGHT_OUTER, FULL_OUTER = "inner", "left-outer", "right-outer", "full-outer"
TAG = b"J"
LEFT, RIGHT = b"l", b"r"
_KEEPS = {INNER: (), LEFT_OUTER: (LEFT,), RIGHT_OUTER: (RIGHT,), FULL_OUTER: (LEFT, RIGHT)}


class Row:
    """One side's row: its ``value`` (bytes) and ``timestamp`` (ms)."""

    __slots__ = ("value", "timestamp")

    def __init__(self, value, timestamp):
        self.value, self.timestamp = value, timestamp


class Joined:
    """A matched pair, or an outer join's unmatched row (the other side ``None``)."""

    __slots__ = ("key", "left", "right")

    def __init__(self, key, left, right):
        self.key, self.left, self.right = key, left, right


def _prefix(side, key):
    return TAG + side + len(key).to_bytes(4, "big") + key


def _parse(k):
    """(side, key, time) of a row's state key, or None."""
    if k[:1] != TAG or k[1:2] not in (LEFT, RIGHT) or len(k) < 6:
        return None
    n = int.from_bytes(k[2:6], "big")
    if len(k) < 14 + n:
        return None
    return k[1:2], k[6 : 6 + n], _untime(k[6 + n : 14 + n])


def _default_output(j):
    side = lambda r: b"null" if r is None else r.value  # noqa: E731
    return b'{"left":' + side(j.left) + b',"right":' + side(j.right) + b"}"


def _record_key(r):
    if r.key is None:
        raise BadRecord("record has no key to join on")
    return r.key


class Join:
    """A join of source ``left`` with source ``right`` (their ``[[source]]``
    names); build one with ``inner``, ``left_outer``, ``right_outer`` or
    ``full_outer``."""

    def __init__(self, kind, left, right, before_ms, after_ms, key_by=None, output=None):
        if kind not in _KEEPS:
            raise ValueError(f"a join is one of {', '.join(_KEEPS)}, not {kind!r}")
        for name, v in (("before_ms", before_ms), ("after_ms", after_ms)):
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"join {name} must be a number of ms >= 0, not {v!r}")
        if left == right:
            raise ValueError(f"a join reads two sources, and both sides are {left!r}")
        self.kind, self.sources = kind, (left, right)
        self.before, self.after = before_ms, after_ms
        keys = key_by if isinstance(key_by, tuple) else (key_by, key_by)
        self.keys = tuple(k or _record_key for k in keys)
        self.output = output or _default_output
        self.checked = False

    def _side(self):
        if not self.checked:
            if not state.event_time():
                raise Broken("a join needs an [event-time] section: rows leave state when the watermark passes them")
            if state.output_mode() != "append":
                raise Broken('a join emits each row once: it needs output-mode = "append"')
            self.checked = True
        source = state.source()
        if source is None:
            raise Broken("the host did not say which source this batch came from")
        if source not in self.sources:
            raise Broken(
                f"a record from source `{source}`, which this join does not read: it joins "
                f"`{self.sources[0]}` with `{self.sources[1]}` (check the [[source]] names)"
            )
        return LEFT if source == self.sources[0] else RIGHT

    def process_batch(self, b, cols, out):
        """Join batch ``b`` (all from one source) against the other side."""
        if not b.value_ends:
            return
        side = self._side()
        values, ends, present = b.values, b.value_ends, b.has_value
        start = 0
        for i, end in enumerate(ends):
            value = values[start:end] if not present or present[i] else None
            start = end
            r = Record(value, i, b)
            mark = cols.mark()
            try:
                out.record = r
                self._add(side, r, out)
            except Broken:
                raise
            except Exception as e:  # noqa: BLE001 - refuses the record
                cols.rollback(mark)
                reason = _errors.reason(e)
                cols.rejected.append((i, reason or "bad record"))

    def _key(self, side, r):
        k = self.keys[0 if side == LEFT else 1](r)
        return k.encode() if isinstance(k, str) else bytes(k)

    def _add(self, side, r, out):
        key = self._key(side, r)
        ts, value = r.timestamp, r.value or b""
        # The other side's times this row matches; once the watermark
        # passes hi no row to come can match, and the row leaves state.
        if side == LEFT:
            lo, hi = ts - self.before, ts + self.after
        else:
            lo, hi = ts - self.after, ts + self.before
        other = RIGHT if side == LEFT else LEFT
        mark = other in _KEEPS[self.kind]
        p = _prefix(other, key)
        matched = False
        for k, v in state.scan(p + _time(lo), p + _time(hi + 1)):
            parsed = _parse(k)
            if parsed is None:
                continue
            matched = True
            mine, theirs = Row(value, ts), Row(v[1:], parsed[2])
            left, right = (mine, theirs) if side == LEFT else (theirs, mine)
            self._emit(out, key, left, right, max(ts, parsed[2]))
            if mark and v[:1] != b"\x01":
                state.put(k, b"\x01" + v[1:])
        pos = _time(r.offset)
        own = _prefix(side, key) + _time(ts) + (r.partition or 0).to_bytes(4, "big") + pos
        state.put(own, (b"\x01" if matched else b"\x00") + value)
        state.register_timer(state.EVENT_TIME, own, hi + 1)

    def _emit(self, out, key, left, right, ts):
        out.emit(self.output(Joined(key, left, right)), key=key, timestamp=ts)

    def on_timer(self, timer, out):
        """A row's time is up: drop it, emitting it first when it matched
        nothing and its side is kept."""
        parsed = _parse(timer.key) if timer.domain == state.EVENT_TIME else None
        if parsed is None:
            raise Broken(f"unexpected timer at {timer.time}")
        side, key, ts = parsed
        if side in _KEEPS[self.kind]:
            v = state.get(timer.key)
            if v is not None and v[:1] != b"\x01":
                row = Row(v[1:], ts)
                self._emit(out, key, row if side == LEFT else None, row if side == RIGHT else None, ts)
        state.delete(timer.key)


def inner(left, right, before_ms, after_ms, key_by=None, output=None):
    """Matched pairs only."""
    return Join(INNER, left, right, before_ms, after_ms, key_by, output)


def left_outer(left, right, before_ms, after_ms, key_by=None, output=None):
    """Also every left row that matched nothing."""
    return Join(LEFT_OUTER, left, right, before_ms, after_ms, key_by, output)


def right_outer(left, right, before_ms, after_ms, key_by=None, output=None):
    """Also every right row that matched nothing."""
    return Join(RIGHT_OUTER, left, right, before_ms, after_ms, key_by, output)


def full_outer(left, right, before_ms, after_ms, key_by=None, output=None):
    """Also every row of either side that matched nothing."""
    return Join(FULL_OUTER, left, right, before_ms, after_ms, key_by, output)


def json_key(field):
    """A ``key_by`` reading top-level JSON field ``field`` of the value (a
    string as is, a number as its text), as a source's ``key-field`` does."""

    def key(r):
        try:
            v = json.loads(r.value)[field]
        except (ValueError, TypeError, KeyError):
            raise BadRecord(f"no JSON field `{field}` to join on") from None
        return v if isinstance(v, str) else json.dumps(v)

    return key
