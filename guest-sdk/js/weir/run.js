// Running the registered function over a batch. Shared by the component's
// exports (entry.js) and weir/testing.js.

import { Columns } from "./columns.js";
import { Broken, reason } from "./errors.js";
import { KEEP, Output, Record, asBytes } from "./record.js";

const encoder = new TextEncoder();
import { Config } from "./host.js";
import { registered, registeredInit, registeredOnTimer } from "./register.js";

// The windowed aggregation (or join) a weir.windowed (weir.joined) builder
// made at init.
let windows;

/** Init the registered transform with `config` pairs; throws why not. */
export function runInit(config) {
  const [kind, f] = registered();
  if (kind === "windowed" || kind === "joined") {
    windows = f(new Config(config));
    return;
  }
  const init = registeredInit();
  if (init) init(new Config(config));
  else if (config.length) throw new Error(`unknown config key \`${config[0][0]}\`: this transform takes no config`);
}

/** The output Columns of batch `b` (the contract's batch fields, camelCase);
 * throws Broken. */
export function runBatch(b) {
  const [kind, f] = registered();
  const n = b.valueEnds.length;
  const cols = new Columns(n);
  const out = new Output(cols);
  const { values, valueEnds, hasValue } = b;
  // No keys, headers or tombstones: a map's output needs only values.
  const plain = b.keyEnds.length === 0 && b.headerEnds.length === 0 && hasValue.length === 0;
  if (kind === "windowed" || kind === "joined") {
    if (!windows) throw new Broken(`the weir.${kind} builder did not run: init first`);
    windows.processBatch(b, cols, out);
    return cols;
  }
  if (kind === "map" && plain) {
    plainMap(f, b, cols);
    return cols;
  }
  const flat = kind === "flatMap";
  let start = 0;
  for (let i = 0; i < n; i++) {
    const end = valueEnds[i];
    const value = hasValue.length === 0 || hasValue[i] ? values.subarray(start, end) : undefined;
    start = end;
    const record = new Record(value, i, b);
    // Only a flatMap can have emitted part of a record's output before
    // it fails; the other kinds emit after their function returns.
    const mark = flat ? cols.mark() : undefined;
    try {
      if (kind === "map") {
        if (value === undefined) {
          out.record = record;
          out.forward();
          continue;
        }
        const v = f(record);
        out.record = record;
        out.push(asBytes(v, `the value ${f.name || "the map function"} returned`), KEEP, KEEP, undefined, undefined);
      } else if (kind === "filter") {
        if (f(record)) {
          out.record = record;
          out.forward();
        }
      } else if (kind === "route") {
        const to = f(record);
        out.record = record;
        out.forward(to);
      } else {
        out.record = record;
        f(record, out);
      }
    } catch (e) {
      if (e instanceof Broken) throw e;
      if (flat) cols.rollback(mark);
      cols.rejected.push({ index: i, reason: reason(e) });
    }
  }
  return cols;
}

const ascii = /^[\x00-\x7f]*$/;

/** A map over a batch without keys, headers or tombstones: outputs need
 * only values. Strings are encoded once per batch: when the batch's
 * outputs are all ASCII strings, each one's byte length is its length. */
function plainMap(f, b, cols) {
  const { values, valueEnds } = b;
  const results = [];
  let strings = true;
  let start = 0;
  // One record object, moved along the batch (records are valid during
  // their call only): an allocation per record costs in an interpreter.
  const record = new Record(undefined, 0, b);
  for (let i = 0; i < valueEnds.length; i++) {
    const end = valueEnds[i];
    record.value = values.subarray(start, end);
    record.index = i;
    start = end;
    let v;
    try {
      v = f(record);
    } catch (e) {
      if (e instanceof Broken) throw e;
      cols.rejected.push({ index: i, reason: reason(e) });
      continue;
    }
    if (typeof v !== "string") {
      v = asBytes(v, `the value ${f.name || "the map function"} returned`);
      strings = false;
    }
    if (cols.origins.length !== i) cols.inOrder = false;
    cols.origins.push(i);
    results.push(v);
  }
  const joined = strings ? results.join("") : undefined;
  if (joined !== undefined && ascii.test(joined)) {
    let at = 0;
    for (const v of results) cols.valueEnds.push((at += v.length));
    cols.chunks.push(encoder.encode(joined));
    cols.bytes = at;
    return;
  }
  for (const v of results) {
    const bytes = asBytes(v);
    cols.chunks.push(bytes);
    cols.bytes += bytes.length;
    cols.valueEnds.push(cols.bytes);
  }
}

/** Fired timers in the contract's batch fields, so timer handlers emit
 * through the same Output: key the timer's, timestamp its time. */
function timerBatch(keys, keyEnds, times) {
  const n = times.length;
  return {
    partition: 0,
    values: new Uint8Array(0),
    valueEnds: new Array(n).fill(0),
    hasValue: new Array(n).fill(false),
    keys,
    keyEnds,
    hasKey: new Array(n).fill(true),
    headers: [],
    headerEnds: [],
    timestamps: times,
    offsets: new Array(n).fill(-1n),
  };
}

/** The Columns of the weir.onTimer function over fired timers (origins
 * index the timers); throws Broken. */
export function runTimers(keys, keyEnds, times, domains) {
  const f = registeredOnTimer() ?? (windows && ((t, o) => windows.onTimer(t, o)));
  if (!f) throw new Broken("timers fired but no weir.onTimer function is registered");
  const b = timerBatch(keys, keyEnds, times);
  const cols = new Columns(times.length);
  const out = new Output(cols);
  let start = 0;
  for (let i = 0; i < times.length; i++) {
    const key = keys.subarray(start, keyEnds[i]);
    start = keyEnds[i];
    out.record = new Record(undefined, i, b);
    const mark = cols.mark();
    try {
      f({ key, time: Number(times[i]), domain: domains[i] }, out);
    } catch (e) {
      if (e instanceof Broken) throw e;
      cols.rollback(mark);
      cols.rejected.push({ index: i, reason: reason(e) });
    }
  }
  return cols;
}
