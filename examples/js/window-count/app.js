// Windowed count per key: counts JSON records per `key` field in tumbling
// event-time windows of `size` (default 10s) with the SDK's window helper;
// each window's count is emitted when the watermark passes its end (append
// mode), as {"key":"user-1","start":0,"end":10000,"count":42} keyed by the
// key. The Rust `window-count` example does the same (the golden suite
// checks they agree). The pipeline needs [event-time] and [state]
// key-field = "key". `weir new --lang js --template window
// NAME` starts a project from this file (`weir build` builds it stateful,
// since it imports weir/windows.js).

import * as weir from "./weir/index.js";
import * as windows from "./weir/windows.js";

weir.windowed((config) => {
  config.only("size");
  const size = config.durationMs("size", 10_000);
  return windows.tumbling(size, windows.count(), { keyBy: (r) => String(JSON.parse(r.text).key) });
});
