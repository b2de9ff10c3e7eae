"""The SDK natively: each kind of function over the real column rules."""

import pytest

import weir
from weir import _register, testing
from weir.testing import In


@pytest.fixture(autouse=True)
def fresh():
    _register.reset()
    yield
    _register.reset()


def test_map_keeps_key_headers_timestamp_and_passes_tombstones():
    @weir.map
    def shout(r):
        return r.text.upper()

    outs, rejected = testing.run(
        [In("a", key="k", headers=[("h", "1")], timestamp=5), In(None, key="gone"), In(b"\xff")]
    )
    assert [o.value for o in outs] == [b"A", None]
    assert (outs[0].key, outs[0].headers, outs[0].timestamp) == (b"k", [("h", b"1")], 5)
    assert outs[1].key == b"gone"
    assert rejected == [(2, "value is not UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte")]


def test_filter_and_route():
    @weir.filter
    def long_enough(r):
        return len(r.value) > 1

    assert testing.values(["a", "bb", "ccc"]) == ["bb", "ccc"]
    _register.reset()

    @weir.route
    def by_size(r):
        return "big" if len(r.value) > 1 else None

    outs, _ = testing.run(["a", "bb"])
    assert [(o.value, o.output) for o in outs] == [(b"a", None), (b"bb", "big")]


def test_flat_map_emits_many_rolls_back_a_refused_record_and_sets_fields():
    @weir.flat_map
    def split(r, out):
        words = r.text.split()
        for w in words:
            out.emit(w, key=w, timestamp=r.timestamp + 1)
        if "bad" in words:
            raise weir.BadRecord("no bad words")
        if not words:
            out.emit_tombstone(to="empty")

    outs, rejected = testing.run([In("x y", timestamp=10), In("ok bad"), In("")])
    assert [(o.value, o.key, o.timestamp, o.origin) for o in outs] == [
        (b"x", b"x", 11, 0),
        (b"y", b"y", 11, 0),
        (None, None, 0, 2),
    ]
    assert outs[2].output == "empty" and outs[2].key is None
    assert rejected == [(1, "no bad words")]


def test_any_exception_refuses_the_record_but_broken_stops():
    @weir.map
    def parse(r):
        if r.value == b"stop":
            raise weir.Broken("out of patience")
        return str(int(r.text) * 2)

    outs, rejected = testing.run(["1", "x"])
    assert [o.value for o in outs] == [b"2"]
    assert rejected == [(1, "ValueError: invalid literal for int() with base 10: 'x' at tests/test_sdk.py:73 in parse")]
    with pytest.raises(weir.Broken, match="out of patience"):
        testing.run(["stop"])


def test_a_wrong_return_type_is_broken_with_the_function_named():
    @weir.map
    def bad(r):
        return 42

    with pytest.raises(weir.Broken, match="the value bad returned must be bytes or str, not int"):
        testing.run(["a"])


def test_config_is_refused_without_init_and_checked_with_it():
    @weir.map
    def ident(r):
        return r.value

    with pytest.raises(weir.Broken, match="unknown config key `x`"):
        testing.run(["a"], config=[("x", "1")])
    factor = {}

    @weir.init
    def setup(config):
        config.only("factor")
        factor["n"] = config.integer("factor", 1)

    testing.run(["a"], config=[("factor", "3")])
    assert factor["n"] == 3
    with pytest.raises(ValueError, match="unknown config key `fator`"):
        testing.run(["a"], config=[("fator", "3")])


def test_two_registrations_are_refused():
    @weir.map
    def one(r):
        return r.value

    with pytest.raises(weir.Broken, match="one is already registered"):

        @weir.filter
        def two(r):
            return True


def test_metrics_natively():
    @weir.filter
    def count(r):
        weir.counter_add("seen")
        return True

    testing.run(["a", "b"])
    assert testing.metrics()["counters"]["seen"] >= 2


def _lookup(doc):
    return doc["missing"]  # the line a refusal names


def test_an_unexpected_exception_names_the_users_file_and_line():
    @weir.map
    def shout(r):
        if r.text == "boom":
            return _lookup({})
        return r.text.upper()

    _, rejected = testing.run(["a", "boom"])
    line = _lookup.__code__.co_firstlineno + 1
    assert rejected == [(1, f"KeyError: 'missing' at tests/test_sdk.py:{line} in _lookup")]
    _register.reset()

    # A BadRecord is the user's own reason, as written.
    @weir.map
    def refuse(r):
        raise weir.BadRecord("no")

    assert testing.run(["a"])[1] == [(0, "no")]


def test_records_read_as_dataclasses_and_dataclasses_emit_as_json():
    import dataclasses

    @dataclasses.dataclass
    class Order:
        id: int
        item: str
        qty: int = 1

    @weir.flat_map
    def upper(r, out):
        o = r.json(Order)
        out.emit_json(dataclasses.replace(o, item=o.item.upper()))

    outs, rejected = testing.run(['{"id":1,"item":"pen"}', '{"id":2,"colour":"red"}', "[1]", "nope"])
    assert [o.value for o in outs] == [b'{"id":1,"item":"PEN","qty":1}']
    assert [i for i, _ in rejected] == [1, 2, 3]
    assert "unexpected keyword argument 'colour'" in rejected[0][1]
    assert rejected[1][1] == "value is not a Order object"
    assert rejected[2][1].startswith("value is not JSON")
