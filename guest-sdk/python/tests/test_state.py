"""Keyed state and timers natively: a tumbling count per key written with
``weir.state`` and ``@weir.on_timer`` directly."""

import json

import pytest

import weir
from weir import _register, state, testing
from weir.testing import In

SIZE = 10


def slot(key, start):
    return key + b"\0" + str(start).encode()


@pytest.fixture(autouse=True)
def fresh():
    _register.reset()
    testing.reset_state()

    @weir.flat_map
    def count(record, out):
        key = str(json.loads(record.value)["key"]).encode()
        start = record.timestamp - record.timestamp % SIZE
        n = int(state.get(slot(key, start)) or 0)
        state.put(slot(key, start), str(n + 1).encode())
        state.register_timer(state.EVENT_TIME, key, start + SIZE)

    @weir.on_timer
    def close(timer, out):
        start = timer.time - SIZE
        n = int(state.get(slot(timer.key, start)) or 0)
        state.delete(slot(timer.key, start))
        out.emit(json.dumps({"key": timer.key.decode(), "start": start, "end": timer.time, "count": n}, separators=(",", ":")))

    yield
    _register.reset()


def test_timers_fire_once_when_the_watermark_passes_them():
    recs = [In(f'{{"key":"{k}","ts":{t}}}', timestamp=t) for k, t in [("a", 1), ("b", 2), ("a", 5), ("a", 11)]]
    outs, rejected = testing.run(recs)
    assert outs == [] and rejected == []
    outs, _ = testing.fire_timers(watermark=10)
    assert sorted(o.value for o in outs) == [
        b'{"key":"a","start":0,"end":10,"count":2}',
        b'{"key":"b","start":0,"end":10,"count":1}',
    ]
    assert [o.key for o in outs] == [b"a", b"b"]
    assert testing.fire_timers(watermark=15)[0] == []
    outs, _ = testing.fire_timers(watermark=20)
    assert [o.value for o in outs] == [b'{"key":"a","start":10,"end":20,"count":1}']
    assert state.native["state"] == {}


def test_a_bad_record_is_refused():
    outs, rejected = testing.run([In("{}", timestamp=1)])
    assert rejected == [(0, "KeyError: 'key' at tests/test_state.py:26 in count")]
    assert state.native["state"] == {} and state.native["timers"] == set()
