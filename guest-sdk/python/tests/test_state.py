"""Keyed state and timers natively: the window-count example."""

import importlib.util
import pathlib

import pytest

from weir import _register, testing
from weir.testing import In

EXAMPLE = pathlib.Path(__file__).parents[3] / "examples/python/window-count/app.py"


@pytest.fixture(autouse=True)
def fresh():
    _register.reset()
    testing.reset_state()
    spec = importlib.util.spec_from_file_location("window_count", EXAMPLE)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    yield
    _register.reset()


def test_windows_fire_once_when_the_watermark_passes_their_end():
    recs = [In(f'{{"key":"{k}","ts":{t}}}', timestamp=t) for k, t in [("a", 1), ("b", 2), ("a", 5), ("a", 11)]]
    outs, rejected = testing.run(recs, config=[("size", "10ms")])
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


def test_a_bad_record_is_refused_and_a_bad_duration_is_named():
    outs, rejected = testing.run([In("{}", timestamp=1)], config=[("size", "10ms")])
    assert rejected == [(0, "KeyError: 'key'")]
    with pytest.raises(ValueError, match="not a duration"):
        testing.run([], config=[("size", "ten")])
