"""Event-time windows with user aggregates, with the Rust SDK's semantics
(``weir_guest::window``): tumbling, sliding and session windows over a
per-record key, kept in keyed state and emitted by the pipeline's
``output-mode``:

- ``append``: each window once, when the watermark passes its end (needs
  ``[event-time]``), then its state is dropped;
- ``update``: every window changed by a batch, once per batch; state is
  dropped when the watermark passes the window;
- ``complete``: every window with every batch; state is never dropped.

Outputs carry the window's key, and its last millisecond (``end - 1``) as
timestamp. Register a builder, called with the config at init::

    @weir.windowed
    def build(config):
        return windows.tumbling(config.duration_ms("size", 10_000), windows.Count(),
                                key_by=lambda r: json.loads(r.value)["key"])

An app that imports ``weir.windows`` is built stateful. Accumulators are
kept as JSON, so an aggregate's accumulator must be JSON-serializable.
"""

import json

from . import _errors, state
from ._batch import Record
from ._errors import BadRecord, Broken

FIXED = b"W"
SESSION = b"S"


def json_string(key):
    """``key`` (bytes, lossy UTF-8) as a JSON string literal, escaped as the
    Rust SDK escapes it (quotes, backslashes, control characters)."""
    out = ['"']
    for c in key.decode("utf-8", "replace"):
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


class Count:
    """Counts records; emits ``{"key":..,"start":..,"end":..,"count":..}``."""

    def zero(self):
        return 0

    def add(self, acc, record):
        return acc + 1

    def merge(self, a, b):
        return a + b

    def result(self, key, start, end, acc):
        return '{"key":' + json_string(key) + f',"start":{start},"end":{end},"count":{acc}}}'


def _time(t):
    return ((t + (1 << 63)) % (1 << 64)).to_bytes(8, "big")


def _untime(b):
    return int.from_bytes(b, "big") - (1 << 63)


def _key_of_record(r):
    if r.key is None:
        raise BadRecord("record has no key to window by")
    return r.key


class Windowed:
    """A windowed aggregation; build one with ``tumbling``, ``sliding`` or
    ``session``."""

    def __init__(self, agg, key_by, size=None, slide=None, gap=None):
        for name, v in (("size", size), ("slide", slide), ("gap", gap)):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(f"window {name} must be a positive number of ms, not {v!r}")
        self.agg, self.size, self.slide, self.gap = agg, size, slide, gap
        self.key_by = key_by or _key_of_record
        self.tag = SESSION if gap is not None else FIXED
        self.checked = False

    def _key(self, record):
        k = self.key_by(record)
        return k.encode() if isinstance(k, str) else bytes(k)

    def process_batch(self, b, cols, out):
        """Fold batch ``b`` into the windows, emit what the mode asks for."""
        mode = state.output_mode()
        if not self.checked:
            if mode != "complete" and not state.event_time():
                raise Broken(
                    f"windowed aggregation in {mode} mode needs an [event-time] section: "
                    "windows close when the watermark passes them"
                )
            self.checked = True
        touched, cache = {}, {}
        values, ends, present = b.values, b.value_ends, b.has_value
        start = 0
        for i, end in enumerate(ends):
            value = values[start:end] if not present or present[i] else None
            start = end
            try:
                self._add(Record(value, i, b), mode, touched, cache)
            except Broken:
                raise
            except Exception as e:  # noqa: BLE001 - refuses the record
                reason = _errors.reason(e)
                cols.rejected.append((i, reason or "bad record"))
        for k, (acc, dirty) in cache.items():
            if dirty:
                state.put(k, json.dumps(acc).encode())
        if not ends:
            return
        if mode == "update":
            for i, k in sorted((i, k) for k, i in touched.items()):
                out.record = Record(None, i, b)
                self._emit_state(k, out, None)
        elif mode == "complete":
            for j, (k, _) in enumerate(list(state.prefix(self.tag))):
                out.record = Record(None, min(j, len(ends) - 1), b)
                self._emit_state(k, out, None)

    def on_timer(self, timer, out):
        """Close the windows ``timer`` belongs to."""
        if timer.domain != state.EVENT_TIME or timer.key[:1] != self.tag:
            raise Broken(f"unexpected timer at {timer.time}")
        if self.tag == FIXED:
            if state.output_mode() == "append":
                self._emit_state(timer.key, out, None)
            state.delete(timer.key)
        else:
            wm = state.watermark()
            self._emit_state(timer.key, out, timer.time if wm is None else wm)

    def _cached(self, cache, k):
        if k not in cache:
            v = state.get(k)
            if v is None:
                return None
            cache[k] = [json.loads(v), False]
        return cache[k][0]

    def _add(self, r, mode, touched, cache):
        key = self._key(r)
        ts = r.timestamp
        timers = mode != "complete"
        if self.tag == FIXED:
            # Compute every window's new accumulator first, so a failing
            # add leaves nothing half-applied.
            updates = []
            start = ts - ts % self.slide
            while start + self.size > ts:
                skey = FIXED + _time(start) + _time(start + self.size) + key
                prev = self._cached(cache, skey)
                acc = self.agg.add(self.agg.zero() if prev is None else prev, r)
                updates.append((skey, acc, prev is None, start + self.size))
                start -= self.slide
            for skey, acc, new, end in updates:
                cache[skey] = [acc, True]
                if new and timers:
                    state.register_timer(state.EVENT_TIME, skey, end)
                touched[skey] = r.index
        else:
            skey = SESSION + key
            stored = state.get(skey)
            sessions = json.loads(stored) if stored is not None else []
            added = self.agg.add(self.agg.zero(), r)
            # Sessions the record bridges merge in start order, the record's
            # contribution last (arrival order).
            merged, kept = [ts, ts + self.gap, self.agg.zero()], []
            for s in sessions:
                if s[0] <= ts + self.gap and ts <= s[1]:
                    if timers:
                        state.delete_timer(state.EVENT_TIME, skey, s[1])
                    merged = [min(merged[0], s[0]), max(merged[1], s[1]), self.agg.merge(merged[2], s[2])]
                else:
                    kept.append(s)
            merged[2] = self.agg.merge(merged[2], added)
            if timers:
                state.register_timer(state.EVENT_TIME, skey, merged[1])
            kept.append(merged)
            kept.sort(key=lambda s: s[0])
            state.put(skey, json.dumps(kept).encode())
            touched[skey] = r.index

    def _emit(self, out, key, start, end, acc):
        out.emit(self.agg.result(key, start, end, acc), key=key, timestamp=end - 1)

    def _emit_state(self, skey, out, close_upto):
        stored = state.get(skey)
        if stored is None:
            return
        if self.tag == FIXED:
            self._emit(out, skey[17:], _untime(skey[1:9]), _untime(skey[9:17]), json.loads(stored))
            return
        key, append, still_open = skey[1:], state.output_mode() == "append", []
        for start, end, acc in json.loads(stored):
            if close_upto is not None and end > close_upto:
                still_open.append([start, end, acc])
            elif close_upto is not None and not append:
                pass
            else:
                self._emit(out, key, start, end, acc)
        if close_upto is not None:
            if still_open:
                state.put(skey, json.dumps(still_open).encode())
            else:
                state.delete(skey)


def tumbling(size_ms, agg, key_by=None):
    """Windows ``size_ms`` long, one after another."""
    return Windowed(agg, key_by, size=size_ms, slide=size_ms)


def sliding(size_ms, slide_ms, agg, key_by=None):
    """Windows ``size_ms`` long starting every ``slide_ms``; a record is in
    each window that covers its event time."""
    return Windowed(agg, key_by, size=size_ms, slide=slide_ms)


def session(gap_ms, agg, key_by=None):
    """A key's records closer than ``gap_ms`` in event time form a session."""
    return Windowed(agg, key_by, gap=gap_ms)
