"""Keeps JSON records whose `amount` is a number above 100; a value that is
not a JSON object is a bad record. The Rust `json-filter` example with
`field = "amount"`, `op = "gt"`, `value = "100"` does the same (the golden
suite checks they agree). `weir.json_field` reads the one member instead of
decoding the whole record. Build: copy into a `weir new --lang python`
project, then `weir build`."""

import weir


@weir.filter
def big(record):
    amount = weir.json_field(record.value, "amount", default=None)
    return type(amount) in (int, float) and amount > 100
