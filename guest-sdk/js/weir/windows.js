// Event-time windows with user aggregates, with the Rust SDK's semantics
// (weir_guest::window): tumbling, sliding and session windows over a
// per-record key, kept in keyed state and emitted by the pipeline's
// `output-mode`:
// - append: each window once, when the watermark passes its end (needs
//   [event-time]), then its state is dropped;
// - update: every window changed by a batch, once per batch; state is
//   dropped when the watermark passes the window;
// - complete: every window with every batch; state is never dropped.
// Outputs carry the window's key, and its last millisecond (end - 1) as
// timestamp. Register a builder, called with the config at init:
//
//   weir.windowed((config) => windows.tumbling(config.durationMs("size", 10_000),
//     windows.count(), { keyBy: (r) => JSON.parse(r.text).key }));
//
// An app that imports weir/windows.js is built stateful. Accumulators are
// kept as JSON, so an aggregate's accumulator must be JSON-serializable.

import { BadRecord, Broken, reason } from "./errors.js";
import { concat, timeBytes, untime } from "./keys.js";
import { Record } from "./record.js";
import * as state from "./state.js";

const FIXED = 0x57; // "W"
const SESSION = 0x53; // "S"
const enc = new TextEncoder();
const dec = new TextDecoder();

/** `key` (bytes, lossy UTF-8) as a JSON string literal, escaped as the
 * Rust SDK escapes it (quotes, backslashes, control characters). */
export function jsonString(key) {
  let out = '"';
  for (const c of dec.decode(key)) {
    const code = c.codePointAt(0);
    if (c === '"') out += '\\"';
    else if (c === "\\") out += "\\\\";
    else if (code < 0x20) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += c;
  }
  return out + '"';
}

/** Counts records; emits {"key":..,"start":..,"end":..,"count":..}. */
export const count = () => ({
  zero: () => 0,
  add: (acc) => acc + 1,
  merge: (a, b) => a + b,
  result: (key, start, end, acc) => `{"key":${jsonString(key)},"start":${start},"end":${end},"count":${acc}}`,
});


const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

function keyOfRecord(r) {
  if (r.key === undefined) throw new BadRecord("record has no key to window by");
  return r.key;
}

/** A windowed aggregation; build one with tumbling, sliding or session. */
export class Windowed {
  constructor(agg, { keyBy, size, slide, gap } = {}) {
    for (const [name, v] of [["size", size], ["slide", slide], ["gap", gap]]) {
      if (v !== undefined && !(Number.isInteger(v) && v >= 1)) throw new Error(`window ${name} must be a positive number of ms, not ${v}`);
    }
    Object.assign(this, { agg, size, slide, gap, keyBy: keyBy ?? keyOfRecord, checked: false });
    this.tag = gap !== undefined ? SESSION : FIXED;
  }

  key(record) {
    const k = this.keyBy(record);
    return typeof k === "string" ? enc.encode(k) : k;
  }

  /** Fold batch `b` into the windows and emit what the mode asks for. */
  processBatch(b, cols, out) {
    const mode = state.outputMode();
    if (!this.checked) {
      if (mode !== "complete" && !state.eventTime()) {
        throw new Broken(`windowed aggregation in ${mode} mode needs an [event-time] section: windows close when the watermark passes them`);
      }
      this.checked = true;
    }
    const touched = new Map(); // hex(skey) -> [skey, last record index]
    const cache = new Map(); // hex(skey) -> [skey, acc, dirty]
    let start = 0;
    for (let i = 0; i < b.valueEnds.length; i++) {
      const end = b.valueEnds[i];
      const value = b.hasValue.length === 0 || b.hasValue[i] ? b.values.subarray(start, end) : undefined;
      start = end;
      try {
        this.add(new Record(value, i, b), mode, touched, cache);
      } catch (e) {
        if (e instanceof Broken) throw e;
        cols.rejected.push({ index: i, reason: reason(e) });
      }
    }
    for (const [, [k, acc, dirty]] of cache) if (dirty) state.put(k, JSON.stringify(acc));
    const n = b.valueEnds.length;
    if (n === 0) return;
    if (mode === "update") {
      const order = [...touched.values()].sort((a, z) => a[1] - z[1]);
      for (const [k, i] of order) {
        out.record = new Record(undefined, i, b);
        this.emitState(k, out, undefined);
      }
    } else if (mode === "complete") {
      state.prefix(Uint8Array.of(this.tag)).forEach(([k], j) => {
        out.record = new Record(undefined, Math.min(j, n - 1), b);
        this.emitState(k, out, undefined);
      });
    }
  }

  /** Close the windows `timer` belongs to. */
  onTimer(timer, out) {
    if (timer.domain !== state.EVENT_TIME || timer.key[0] !== this.tag) throw new Broken(`unexpected timer at ${timer.time}`);
    if (this.tag === FIXED) {
      if (state.outputMode() === "append") this.emitState(timer.key, out, undefined);
      state.del(timer.key);
    } else {
      const wm = state.watermark();
      this.emitState(timer.key, out, wm === undefined ? timer.time : wm);
    }
  }

  cached(cache, k) {
    const h = hex(k);
    if (!cache.has(h)) {
      const v = state.get(k);
      if (v === undefined) return undefined;
      cache.set(h, [k, JSON.parse(dec.decode(v)), false]);
    }
    return cache.get(h)[1];
  }

  add(r, mode, touched, cache) {
    const key = this.key(r);
    const ts = r.timestamp;
    const timers = mode !== "complete";
    if (this.tag === FIXED) {
      // Every window's new accumulator first, so a failing add leaves
      // nothing half-applied.
      const updates = [];
      for (let start = ts - (((ts % this.slide) + this.slide) % this.slide); start + this.size > ts; start -= this.slide) {
        const skey = concat(Uint8Array.of(FIXED), timeBytes(start), timeBytes(start + this.size), key);
        const prev = this.cached(cache, skey);
        updates.push([skey, this.agg.add(prev === undefined ? this.agg.zero() : prev, r), prev === undefined, start + this.size]);
      }
      for (const [skey, acc, fresh, end] of updates) {
        cache.set(hex(skey), [skey, acc, true]);
        if (fresh && timers) state.registerTimer(state.EVENT_TIME, skey, end);
        touched.set(hex(skey), [skey, r.index]);
      }
    } else {
      const skey = concat(Uint8Array.of(SESSION), key);
      const stored = state.get(skey);
      const sessions = stored === undefined ? [] : JSON.parse(dec.decode(stored));
      const added = this.agg.add(this.agg.zero(), r);
      // Sessions the record bridges merge in start order, the record's
      // contribution last (arrival order).
      let merged = [ts, ts + this.gap, this.agg.zero()];
      const kept = [];
      for (const s of sessions) {
        if (s[0] <= ts + this.gap && ts <= s[1]) {
          if (timers) state.deleteTimer(state.EVENT_TIME, skey, s[1]);
          merged = [Math.min(merged[0], s[0]), Math.max(merged[1], s[1]), this.agg.merge(merged[2], s[2])];
        } else {
          kept.push(s);
        }
      }
      merged[2] = this.agg.merge(merged[2], added);
      if (timers) state.registerTimer(state.EVENT_TIME, skey, merged[1]);
      kept.push(merged);
      kept.sort((a, z) => a[0] - z[0]);
      state.put(skey, JSON.stringify(kept));
      touched.set(hex(skey), [skey, r.index]);
    }
  }

  emit(out, key, start, end, acc) {
    out.emit(this.agg.result(key, start, end, acc), { key, timestamp: end - 1 });
  }

  emitState(skey, out, closeUpto) {
    const stored = state.get(skey);
    if (stored === undefined) return;
    if (this.tag === FIXED) {
      this.emit(out, skey.subarray(17), untime(skey, 1), untime(skey, 9), JSON.parse(dec.decode(stored)));
      return;
    }
    const key = skey.subarray(1);
    const append = state.outputMode() === "append";
    const open = [];
    for (const [start, end, acc] of JSON.parse(dec.decode(stored))) {
      if (closeUpto !== undefined && end > closeUpto) open.push([start, end, acc]);
      else if (closeUpto !== undefined && !append) continue;
      else this.emit(out, key, start, end, acc);
    }
    if (closeUpto !== undefined) {
      if (open.length) state.put(skey, JSON.stringify(open));
      else state.del(skey);
    }
  }
}

/** Windows `sizeMs` long, one after another. */
export const tumbling = (sizeMs, agg, { keyBy } = {}) => new Windowed(agg, { keyBy, size: sizeMs, slide: sizeMs });
/** Windows `sizeMs` long starting every `slideMs`. */
export const sliding = (sizeMs, slideMs, agg, { keyBy } = {}) => new Windowed(agg, { keyBy, size: sizeMs, slide: slideMs });
/** A key's records closer than `gapMs` in event time form a session. */
export const session = (gapMs, agg, { keyBy } = {}) => new Windowed(agg, { keyBy, gap: gapMs });
