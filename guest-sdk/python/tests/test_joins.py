"""Joins natively, against the join's definition over shuffled input."""

import random

import pytest

import weir
from weir import _register, joins, testing
from weir.testing import In


@pytest.fixture(autouse=True)
def fresh():
    _register.reset()
    testing.reset_state()
    yield
    _register.reset()


def register(kind):
    @weir.joined
    def build(config):
        out = lambda j: (  # noqa: E731
            (j.left.value if j.left else b"-") + b"|" + (j.right.value if j.right else b"-")
        )
        return joins.Join(kind, "orders", "payments", 2, 5, output=out)


def reference(kind, rows):
    """Every pair with key equal and right time in [left - 2, left + 5],
    then (outer) the rows that matched nothing."""
    left = [r for r in rows if r[0] == "L"]
    right = [r for r in rows if r[0] == "R"]
    hit = lambda a, b: a[1] == b[1] and a[2] - 2 <= b[2] <= a[2] + 5  # noqa: E731
    out = [f"{a[3]}|{b[3]}" for a in left for b in right if hit(a, b)]
    if kind in (joins.LEFT_OUTER, joins.FULL_OUTER):
        out += [f"{a[3]}|-" for a in left if not any(hit(a, b) for b in right)]
    if kind in (joins.RIGHT_OUTER, joins.FULL_OUTER):
        out += [f"-|{b[3]}" for b in right if not any(hit(a, b) for a in left)]
    return sorted(out)


def simulate(kind, seed):
    """Random batches, each from one source, with the host's watermark
    (smallest of each source's largest time, minus a delay) and late drops."""
    testing.reset_state()
    _register.reset()
    register(kind)
    rnd = random.Random(seed)
    wm, top, clock = None, {}, {"L": 0, "R": 0}
    kept, got, n = [], [], 0
    while n < 300:
        side = rnd.choice("LR")
        batch = []
        for _ in range(rnd.randrange(1, 12)):
            clock[side] += rnd.randrange(3)
            batch.append((side, f"k{rnd.randrange(6)}", clock[side] - rnd.randrange(8), f"{side}{n}"))
            n += 1
        on_time = [b for b in batch if wm is None or b[2] >= wm]
        testing.state.native["watermark"] = wm
        source = "orders" if side == "L" else "payments"
        recs = [In(v, key=k, timestamp=t) for _, k, t, v in on_time]
        outs, rejected = testing.run(recs, source=source, first_offset=n * 100)
        assert rejected == []
        got += [o.value.decode() for o in outs]
        kept += on_time
        got += [o.value.decode() for o in testing.fire_timers(watermark=wm)[0]] if wm is not None else []
        top[side] = max([top.get(side, -(10**9))] + [b[2] for b in batch])
        nxt = min(top.values()) - 6
        wm = nxt if wm is None else max(wm, nxt)
    got += [o.value.decode() for o in testing.fire_timers(watermark=10**12)[0]]
    assert testing.state.native["state"] == {}, "every row left state"
    return sorted(got), reference(kind, kept)


@pytest.mark.parametrize("kind", [joins.INNER, joins.LEFT_OUTER, joins.RIGHT_OUTER, joins.FULL_OUTER])
def test_every_join_type_equals_its_definition(kind):
    for seed in (1, 7, 42):
        got, want = simulate(kind, seed)
        assert any("-" not in w for w in want)
        assert got == want, (kind, seed)


def test_rows_are_kept_only_as_long_as_the_range_allows():
    register(joins.LEFT_OUTER)
    testing.run([In("o", key="k", timestamp=100)], source="orders")
    assert testing.fire_timers(watermark=105)[0] == []
    outs, _ = testing.fire_timers(watermark=106)
    assert [(o.value, o.key, o.timestamp) for o in outs] == [(b"o|-", b"k", 100)]
    assert testing.state.native["state"] == {}


def test_misuse_is_explained():
    register(joins.INNER)
    with pytest.raises(weir.Broken, match="source `refunds`, which this join does not read"):
        testing.run([In("x", key="k")], source="refunds")
    outs, rejected = testing.run([In("x")], source="orders")
    assert rejected == [(0, "record has no key to join on")]
    testing.reset_state(output_mode="update")
    with pytest.raises(weir.Broken, match='output-mode = "append"'):
        testing.run([In("x", key="k")], source="orders")
    with pytest.raises(ValueError, match="both sides are 'a'"):
        joins.inner("a", "a", 0, 0)
    key = joins.json_key("id")
    assert key(weir.Record(b'{"id":7}', 0, None)) == "7"
