"""@weir.filter_batch natively: the same column rules as the component, the
JSON column read in Python instead of by the host."""

import math

import pytest

import weir
from weir import _register, testing
from weir.testing import In


@pytest.fixture(autouse=True)
def fresh():
    _register.reset()
    yield
    _register.reset()


def test_keeps_what_the_function_answers_true_for_and_refuses_non_objects():
    seen = []

    @weir.filter_batch
    def big(batch):
        amounts = batch.json_numbers("amount")
        seen.append(amounts)
        return [a > 100 for a in amounts]

    outs, rejected = testing.run(
        ['{"amount":150}', '{"amount":5}', "nope", '{"amount":"x"}', '{"a":1,"amount":101.5}', "[1]"]
    )
    assert [o.value for o in outs] == [b'{"amount":150}', b'{"a":1,"amount":101.5}']
    assert [o.origin for o in outs] == [0, 4]
    assert [i for i, _ in rejected] == [2, 5]
    assert all("not a JSON object" in why for _, why in rejected)
    a = seen[0]
    assert a[0] == 150.0 and a[1] == 5.0 and a[4] == 101.5
    assert math.isnan(a[2]) and math.isnan(a[3]) and math.isnan(a[5])


def test_all_kept_in_order_and_keys_headers_tombstones_pass_unchanged():
    @weir.filter_batch
    def everything(batch):
        assert len(batch) == 3
        assert batch.values() == [b"a", None, b"c"]
        assert batch.value(2) == b"c"
        assert batch.timestamps == [1, 2, 3]
        return [True] * len(batch)

    outs, rejected = testing.run(
        [In("a", key="k", timestamp=1), In(None, key="gone", timestamp=2), In("c", headers=[("h", "v")], timestamp=3)]
    )
    assert rejected == []
    assert [(o.value, o.key, o.origin) for o in outs] == [(b"a", b"k", 0), (None, b"gone", 1), (b"c", None, 2)]
    assert outs[2].headers == [("h", b"v")]


def test_a_tombstone_read_as_json_is_refused_with_its_reason():
    @weir.filter_batch
    def any_amount(batch):
        return [not math.isnan(a) for a in batch.json_numbers("amount")]

    outs, rejected = testing.run([In('{"amount":1}'), In(None, key="k")])
    assert [o.value for o in outs] == [b'{"amount":1}']
    assert rejected == [(1, "record has no value")]


def test_a_wrong_number_of_answers_breaks_the_transform():
    @weir.filter_batch
    def short(batch):
        return [True]

    with pytest.raises(weir.Broken, match="short answered 1 times for a batch of 2 records"):
        testing.run(["a", "b"])
