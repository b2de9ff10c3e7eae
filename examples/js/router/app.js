// Routes JSON records to the named output `eu` or `us` by their `region`
// field; other regions and records without one go to the default output; a
// value that is not a JSON object is a bad record. The Rust `router`
// example with field = "region", route.eu = "eu", route.us = "us",
// strict = "true" does the same. Build: copy into a `weir new --lang js`
// project, then `weir build`.

import * as weir from "./weir/index.js";

weir.route((record) => {
  const doc = JSON.parse(record.text);
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new weir.BadRecord("not a JSON object");
  return doc.region === "eu" || doc.region === "us" ? doc.region : undefined;
});
