// Drops orders under 10, flags those of 1000 and more with "big": true; a
// record that is not a JSON object is refused. The way the README teaches:
// weir.jsonNumber reads `amount` (the host reads it for the whole batch in
// one call, the first time a record asks), and the output is the record's
// own bytes, or its text with the flag spliced in before the closing
// brace. Build: copy into a `weir new --lang js` project, then `weir
// build`. naive.js beside it decodes and encodes each record with
// JSON.parse and JSON.stringify.

import * as weir from "./weir/index.js";

weir.flatMap((record, out) => {
  const amount = weir.jsonNumber(record, "amount");
  if (Number.isNaN(amount)) throw new weir.BadRecord("amount is not a number");
  if (amount < 10) return;
  if (amount < 1000) {
    out.emit(record.value);
    return;
  }
  const text = record.text;
  out.emit(`${text.slice(0, text.lastIndexOf("}"))},"big":true}`);
});
