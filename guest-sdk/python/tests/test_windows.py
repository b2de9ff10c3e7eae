"""Window helpers natively, against straightforward references."""

import json
import random

import pytest

import weir
from weir import _register, testing, windows
from weir.testing import In


@pytest.fixture(autouse=True)
def fresh():
    _register.reset()
    yield
    _register.reset()


def events(n, seed=7, keys=3, spread=50):
    rnd = random.Random(seed)
    return [(f"k{rnd.randrange(keys)}", rnd.randrange(spread) * 10) for _ in range(n)]


def feed(evs, batch=7):
    """Run the events in batches, then fire every timer; all outputs."""
    outs = []
    for i in range(0, len(evs), batch):
        recs = [In(json.dumps({"key": k, "ts": t}), timestamp=t) for k, t in evs[i : i + batch]]
        o, rejected = testing.run(recs)
        assert rejected == []
        outs += o
    o, _ = testing.fire_timers(watermark=10**9)
    return outs + o


def by_key(r):
    return json.loads(r.value)["key"]


def values(outs):
    return sorted((json.loads(o.value) for o in outs), key=lambda d: sorted(d.items()))


def test_tumbling_and_sliding_counts_equal_a_reference():
    evs = events(200)
    for size, slide in [(100, 100), (100, 30)]:
        testing.reset_state()
        _register.reset()

        @weir.windowed
        def build(config):
            return windows.sliding(size, slide, windows.Count(), key_by=by_key)

        got = values(feed(evs))
        want = {}
        for k, t in evs:
            start = t - t % slide
            while start + size > t:
                want[(k, start)] = want.get((k, start), 0) + 1
                start -= slide
        expected = [{"key": k, "start": s, "end": s + size, "count": n} for (k, s), n in want.items()]
        assert got == sorted(expected, key=lambda d: sorted(d.items())), (size, slide)


def test_sessions_merge_and_close_at_the_watermark():
    evs = events(120, spread=200)
    testing.reset_state()

    @weir.windowed
    def build(config):
        return windows.session(25, windows.Count(), key_by=by_key)

    got = values(feed(evs))
    want = []
    for k in sorted({k for k, _ in evs}):
        ts = sorted(t for kk, t in evs if kk == k)
        start, last, n = ts[0], ts[0], 1
        for t in ts[1:]:
            if t <= last + 25:
                last, n = max(last, t), n + 1
            else:
                want.append({"key": k, "start": start, "end": last + 25, "count": n})
                start, last, n = t, t, 1
        want.append({"key": k, "start": start, "end": last + 25, "count": n})
    assert got == sorted(want, key=lambda d: sorted(d.items()))


def test_update_mode_emits_changed_windows_per_batch_and_needs_event_time():
    testing.reset_state(output_mode="update")

    @weir.windowed
    def build(config):
        return windows.tumbling(100, windows.Count(), key_by=by_key)

    outs, _ = testing.run([In(json.dumps({"key": "a"}), timestamp=t) for t in (1, 2, 150)])
    # In the order of the records that last changed each window.
    assert [json.loads(o.value) for o in outs] == [
        {"key": "a", "start": 0, "end": 100, "count": 2},
        {"key": "a", "start": 100, "end": 200, "count": 1},
    ]
    assert [o.key for o in outs] == [b"a", b"a"] and outs[0].timestamp == 99
    testing.reset_state(output_mode="update", event_time=False)
    _register.reset()

    @weir.windowed
    def again(config):
        return windows.tumbling(100, windows.Count(), key_by=by_key)

    with pytest.raises(weir.Broken, match="needs an \\[event-time\\] section"):
        testing.run([In("{}", timestamp=1)])


def test_a_record_without_the_key_is_refused():
    testing.reset_state()

    @weir.windowed
    def build(config):
        return windows.tumbling(100, windows.Count(), key_by=by_key)

    _, rejected = testing.run([In("{}", timestamp=1)])
    assert rejected == [(0, "KeyError: 'key' at tests/test_windows.py:38 in by_key")]


def test_keys_are_escaped_as_the_rust_sdk_does():
    assert windows.json_string(b'a"b\\c\x01\xc3\xa9') == '"a\\"b\\\\c\\u0001\xe9"'
