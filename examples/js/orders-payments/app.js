// Orders joined with their payments: a stream-stream join of the sources
// `orders` and `payments` on `order_id` with the SDK's join helper, a
// payment matching an order when its time is at most `before` earlier and
// `after` later (defaults 0s and 1m); `join` is inner (default),
// left-outer, right-outer or full-outer. Output: {"order_id","user",
// "amount"}, null for the side an outer row lacks, keyed by the order id.
// The Rust `orders-payments` example does the same (the golden suite
// checks they agree). The pipeline needs [event-time] (with the payments'
// own event-time-field) and each source's key-field = "order_id". `weir
// new --lang js --template join NAME` starts a project from this file
// (`weir build` builds it stateful, since it imports weir/joins.js).

import * as weir from "./weir/index.js";
import * as joins from "./weir/joins.js";

const dec = new TextDecoder();

function row(j) {
  const order = j.left ? JSON.parse(dec.decode(j.left.value)) : {};
  const payment = j.right ? JSON.parse(dec.decode(j.right.value)) : {};
  return JSON.stringify({ order_id: dec.decode(j.key), user: order.user ?? null, amount: payment.amount ?? null });
}

weir.joined((config) => {
  config.only("join", "before", "after");
  const key = joins.jsonKey("order_id");
  return new joins.Join(config.get("join") ?? joins.INNER, "orders", "payments", {
    beforeMs: config.durationMs("before", 0),
    afterMs: config.durationMs("after", 60_000),
    keyBy: key,
    output: row,
  });
});
