"""weir.json_field against json.loads, on its fast path and off it."""

import json

import pytest

import weir

DOCS = [
    b"{}",
    b' { "a" : 1 , "b":[1,{"c":"}"}],"amount":150.5e1}',
    b'{"id":7,"amount":-0.25,"region":"eu","note":"h\\u00e9llo \\"q\\""}',
    b'{"n":null,"t":true,"f":false,"s":"x","o":{"amount":3},"amount":42}',
    b'{"a":"amount","amount":3,"region":"h\xc3\xa9"}',
    b'{"amount":{"amount":5}}',
    b'{"esc\\u0061ped":"yes","amount":"not a number"}',
    b'{"id":1,"amount":12,"amount":13}',
]


@pytest.mark.parametrize("doc", DOCS)
def test_agrees_with_json_loads_on_every_member(doc):
    first = {}
    for k, v in json.loads(doc, object_pairs_hook=lambda p: p):
        first.setdefault(k, v)
    # json.loads with a pairs hook gives lists for nested objects too; compare
    # against a plain decoding of each member instead.
    want = {}
    for k, v in json.loads(doc, object_pairs_hook=lambda p: dict(reversed(p))).items():
        want[k] = v
    for name in ["a", "amount", "escaped", "o", "n", "t", "f", "s", "id", "region", "missing"]:
        assert weir.json_field(doc, name, default="<none>") == want.get(name, "<none>"), name


def test_a_missing_member_without_default_and_broken_records_are_bad_records():
    with pytest.raises(weir.BadRecord, match="missing field `amount`"):
        weir.json_field(b'{"a":1}', "amount")
    for bad in [b"not json", b"[1,2]", b'"amount"', b'{"a":"amount":1}', b'{"a":tru,"amount":1}', b""]:
        with pytest.raises(weir.BadRecord, match="not a JSON object"):
            weir.json_field(bad, "amount", default=None)
    with pytest.raises(weir.BadRecord, match="no value"):
        weir.json_field(None, "amount")


def test_a_filter_on_a_field_keeps_the_records_as_they_came():
    from weir import _register, testing
    from weir.testing import In

    _register.reset()
    try:

        @weir.filter
        def big(r):
            a = weir.json_field(r.value, "amount", default=None)
            return isinstance(a, (int, float)) and a > 100

        outs, rejected = testing.run(
            [In('{"amount":150}'), In('{"amount":5}'), In("nope"), In('{"x":1,"amount":101.5}')]
        )
        assert [o.value for o in outs] == [b'{"amount":150}', b'{"x":1,"amount":101.5}']
        assert [i for i, _ in rejected] == [2]
    finally:
        _register.reset()
