"""Orders joined with their payments: a stream-stream join of the sources
`orders` and `payments` on `order_id` with the SDK's join helper, a payment
matching an order when its time is at most `before` earlier and `after`
later (defaults 0s and 1m); `join` is inner (default), left-outer,
right-outer or full-outer. Output: {"order_id","user","amount"}, null for
the side an outer row lacks, keyed by the order id. The Rust
`orders-payments` example does the same (the golden suite checks they
agree). The pipeline needs `[event-time]` (with the payments' own
`event-time-field`) and each source's `key-field = "order_id"`. `weir new
--lang python --template join NAME` starts a project from this file
(`weir build` builds it stateful, since it imports weir.joins)."""

import json

import weir
from weir import joins


def _row(j):
    order = json.loads(j.left.value) if j.left else {}
    payment = json.loads(j.right.value) if j.right else {}
    out = {"order_id": j.key.decode(), "user": order.get("user"), "amount": payment.get("amount")}
    return json.dumps(out, separators=(",", ":"))


@weir.joined
def build(config):
    config.only("join", "before", "after")
    kind = config.get("join") or joins.INNER
    before = config.duration_ms("before", 0)
    after = config.duration_ms("after", 60_000)
    key = joins.json_key("order_id")
    return joins.Join(kind, "orders", "payments", before, after, key_by=key, output=_row)
