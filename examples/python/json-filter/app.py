"""Keeps JSON records whose `amount` is a number above 100; a value that is
not a JSON object is a bad record. The Rust `json-filter` example with
`field = "amount"`, `op = "gt"`, `value = "100"` does the same (the golden
suite checks they agree). One call per batch: the host reads the `amount`
column (`batch.json_numbers`), and NaN (absent or not a number) is never
above 100. Build: copy into a `weir new --lang python` project, then
`weir build`."""

import weir


@weir.filter_batch
def big(batch):
    return [amount > 100 for amount in batch.json_numbers("amount")]
