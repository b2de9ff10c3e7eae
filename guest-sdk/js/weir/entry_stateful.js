// The exports of a stateful component: `weir build` makes this module the
// entry (world `full-transformer`) when app.js imports weir/state.js; it
// plugs weir's state, timers and clock imports into weir/state.js and adds
// the timer handler to entry.js's exports.

import { eventTime, processingTime, queryOutputMode, source, watermark } from "weir:transform/context@0.2.0";
import * as wstate from "weir:transform/state@0.2.0";
import * as wtimers from "weir:transform/timers@0.2.0";

import { outputBatch, recordTransform, transform } from "./entry.js";
import { runTimers } from "./run.js";
import { setStateBackend } from "./state.js";

setStateBackend({
  get: (k) => wstate.get(k),
  put: (k, v) => wstate.put(k, v),
  delete: (k) => wstate.delete(k),
  prefix: (p) => {
    const out = [];
    let after;
    for (;;) {
      const entries = wstate.scanPrefix(p, after, 256);
      for (const e of entries) out.push([e.key, e.value]);
      if (entries.length < 256) return out;
      after = entries[entries.length - 1].key;
    }
  },
  scan: (start, end) => {
    const out = [];
    for (;;) {
      const entries = wstate.scan(start, end, 256);
      for (const e of entries) out.push([e.key, e.value]);
      if (entries.length < 256) return out;
      const last = entries[entries.length - 1].key;
      start = new Uint8Array(last.length + 1);
      start.set(last);
    }
  },
  registerTimer: (d, k, at) => wtimers.register(d, k, BigInt(at)),
  deleteTimer: (d, k, at) => wtimers.delete(d, k, BigInt(at)),
  watermark: () => {
    const w = watermark();
    return w === undefined ? undefined : Number(w);
  },
  processingTime: () => Number(processingTime()),
  outputMode: () => queryOutputMode(),
  eventTime: () => eventTime(),
  source: () => source(),
});

export { recordTransform, transform };

export const timerHandler = {
  onTimers(fired) {
    try {
      return outputBatch(runTimers(fired.keys, fired.keyEnds, fired.times, fired.domains), fired.times);
    } catch (e) {
      throw { tag: "broken", val: e instanceof Error ? e.message : String(e) };
    }
  },
};
