// Run a transform natively (`node --test`), through the same batch loop and
// column rules the component uses.
//
//   import * as testing from "./weir/testing.js";
//   import "./app.js";
//   assert.deepEqual(testing.values(["a"]), ["A"]);

import { nativeMetrics } from "./host.js";
import { runBatch, runInit, runTimers } from "./run.js";
import { EVENT_TIME, native } from "./state.js";

const enc = new TextEncoder();
const dec = new TextDecoder();
const bytes = (v) => (typeof v === "string" ? enc.encode(v) : v);

/** A batch in the contract's fields from `{value, key, headers, timestamp}`
 * records (or plain values); `value: undefined` is a tombstone. */
export function batch(records, firstOffset = 0) {
  const rs = records.map((r) => (typeof r === "string" || r instanceof Uint8Array || r === undefined ? { value: r } : r));
  const chunks = rs.map((r) => bytes(r.value) ?? new Uint8Array(0));
  const keys = rs.map((r) => bytes(r.key) ?? new Uint8Array(0));
  const ends = (cs) => {
    let at = 0;
    return cs.map((c) => (at += c.length));
  };
  const cat = (cs) => {
    const out = new Uint8Array(cs.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of cs) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  };
  const headers = [];
  const headerEnds = rs.map((r) => {
    for (const [name, value] of r.headers ?? []) headers.push({ name, value: bytes(value) });
    return headers.length;
  });
  const anyKey = rs.some((r) => r.key !== undefined);
  return {
    partition: 0,
    values: cat(chunks),
    valueEnds: ends(chunks),
    hasValue: rs.every((r) => r.value !== undefined) ? [] : rs.map((r) => r.value !== undefined),
    keys: cat(keys),
    keyEnds: anyKey ? ends(keys) : [],
    hasKey: anyKey ? rs.map((r) => r.key !== undefined) : [],
    headers,
    headerEnds: headers.length ? headerEnds : [],
    timestamps: rs.map((r) => BigInt(r.timestamp ?? 0)),
    offsets: rs.map((_, i) => BigInt(firstOffset + i)),
  };
}

/** `{outputs, rejected}` for a batch of `records`, after init with `config`
 * pairs, as the host runs a batch of source `source` (state.source()) at
 * offsets `firstOffset` on. Each output: `{value, key, headers, timestamp,
 * output, origin}`. */
export function run(records, config = [], { source, firstOffset = 0 } = {}) {
  runInit(config);
  native.source = source;
  try {
    const b = batch(records, firstOffset);
    return outputs(b, runBatch(b));
  } finally {
    native.source = undefined;
  }
}

/** Forget native state and timers, reset the clocks, and set the
 * pipeline's output mode and whether it has event time. */
export function resetState({ outputMode = "append", eventTime = true } = {}) {
  native.state.clear();
  native.timers.clear();
  native.watermark = undefined;
  native.processingTime = 0;
  native.outputMode = outputMode;
  native.eventTime = eventTime;
  native.source = undefined;
}

/** Advance the native clocks, then fire the timers they reach, in time
 * order, through the weir.onTimer function: `{outputs, rejected}` (an
 * output's `origin` indexes the fired timers). */
export function fireTimers({ watermark, processingTime } = {}) {
  if (watermark !== undefined) native.watermark = watermark;
  if (processingTime !== undefined) native.processingTime = processingTime;
  const clock = (d) => (d === EVENT_TIME ? native.watermark ?? -Infinity : native.processingTime);
  const due = [...native.timers.entries()]
    .filter(([, t]) => t.time <= clock(t.domain))
    .sort(([ka, a], [kb, b]) => a.time - b.time || (ka < kb ? -1 : 1));
  for (const [k] of due) native.timers.delete(k);
  const keyEnds = [];
  let at = 0;
  for (const [, t] of due) keyEnds.push((at += t.key.length));
  const keys = new Uint8Array(at);
  at = 0;
  for (const [, t] of due) {
    keys.set(t.key, at);
    at += t.key.length;
  }
  const times = due.map(([, t]) => BigInt(t.time));
  const b = batch(due.map(([, t]) => ({ value: undefined, key: t.key, timestamp: t.time })));
  return outputs(b, runTimers(keys, keyEnds, times, due.map(([, t]) => t.domain)));
}

function outputs(b, cols) {
  const outputs = cols.rows().map(({ origin, output, key, value, headers, timestamp }) => ({
    value,
    key,
    headers,
    timestamp: Number(timestamp ?? b.timestamps[origin]),
    output,
    origin,
  }));
  return { outputs, rejected: cols.rejected };
}

/** The output values as text (undefined for tombstones). */
export function values(records, config = []) {
  return run(records, config).outputs.map((o) => (o.value === undefined ? undefined : dec.decode(o.value)));
}

/** Counters and gauges reported so far. */
export const metrics = () => nativeMetrics;
