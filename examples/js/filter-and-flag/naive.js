// The filter-and-flag as a newcomer first writes it in JavaScript: each
// record decoded with JSON.parse, changed, encoded with JSON.stringify.

import * as weir from "./weir/index.js";

weir.flatMap((record, out) => {
  const order = JSON.parse(record.text);
  if (order.amount < 10) return;
  if (order.amount >= 1000) order.big = true;
  out.emit(JSON.stringify(order));
});
