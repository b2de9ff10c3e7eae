"""Windowed count per key: counts JSON records per `key` field in tumbling
event-time windows of `size` (default 10s), in keyed state; each window's
count is emitted once, when the watermark passes its end, as
`{"key":"user-1","start":0,"end":10000,"count":42}` keyed by the key. The
Rust `window-count` example does the same (the golden suite checks they
agree). The pipeline needs `[event-time]` and `[state] key-field = "key"`.
Build: copy into a `weir new --lang python` project, then `weir build`
(it builds stateful, since this imports weir.state)."""

import json

import weir
from weir import state

size = 10_000


@weir.init
def setup(config):
    global size
    config.only("size")
    size = config.duration_ms("size", 10_000)


def slot(key, start):
    return key + b"\0" + str(start).encode()


@weir.flat_map
def count(record, out):
    key = str(json.loads(record.value)["key"]).encode()
    start = record.timestamp - record.timestamp % size
    n = int(state.get(slot(key, start)) or 0)
    state.put(slot(key, start), str(n + 1).encode())
    state.register_timer(state.EVENT_TIME, key, start + size)


@weir.on_timer
def close(timer, out):
    start = timer.time - size
    n = int(state.get(slot(timer.key, start)) or 0)
    state.delete(slot(timer.key, start))
    key = timer.key.decode()
    out.emit(json.dumps({"key": key, "start": start, "end": timer.time, "count": n}, separators=(",", ":")))
