// Keeps JSON records whose `amount` is a number above 100; a value that is
// not a JSON object is a bad record. The Rust `json-filter` example with
// field = "amount", op = "gt", value = "100" does the same (the golden suite
// checks they agree). Build: copy into a `weir new --lang js` project, then
// `weir build`.

import * as weir from "./weir/index.js";

weir.filter((record) => {
  const doc = JSON.parse(record.text);
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new weir.BadRecord("not a JSON object");
  return typeof doc.amount === "number" && doc.amount > 100;
});
