"""Keeps JSON records whose `amount` is a number above 100; a value that is
not a JSON object is a bad record. The Rust `json-filter` example with
`field = "amount"`, `op = "gt"`, `value = "100"` does the same (the golden
suite checks they agree). Build: copy into a `weir new --lang python`
project, then `weir build`."""

import json

import weir


@weir.filter
def big(record):
    doc = json.loads(record.value)
    if not isinstance(doc, dict):
        raise weir.BadRecord("not a JSON object")
    amount = doc.get("amount")
    return isinstance(amount, (int, float)) and not isinstance(amount, bool) and amount > 100
