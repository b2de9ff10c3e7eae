// Windowed count per key: counts JSON records per `key` field in tumbling
// event-time windows of `size` (default 10s), in keyed state; each window's
// count is emitted once, when the watermark passes its end, as
// {"key":"user-1","start":0,"end":10000,"count":42} keyed by the key. The
// Rust `window-count` example does the same (the golden suite checks they
// agree). The pipeline needs [event-time] and [state] key-field = "key".
// Build: copy into a `weir new --lang js` project, then `weir build` (it
// builds stateful, since this imports weir/state.js).

import * as weir from "./weir/index.js";
import * as state from "./weir/state.js";

let size = 10_000;

weir.init((config) => {
  config.only("size");
  size = config.durationMs("size", 10_000);
});

const slot = (key, start) => `${key}\u0000${start}`;

weir.flatMap((record) => {
  const key = String(JSON.parse(record.text).key);
  const start = record.timestamp - (record.timestamp % size);
  const n = Number(new TextDecoder().decode(state.get(slot(key, start)) ?? new Uint8Array(0)) || 0);
  state.put(slot(key, start), String(n + 1));
  state.registerTimer(state.EVENT_TIME, key, start + size);
});

weir.onTimer((timer, out) => {
  const start = timer.time - size;
  const key = new TextDecoder().decode(timer.key);
  const n = Number(new TextDecoder().decode(state.get(slot(key, start)) ?? new Uint8Array(0)) || 0);
  state.del(slot(key, start));
  out.emit(JSON.stringify({ key, start, end: timer.time, count: n }));
});
