// Stream-stream joins with the Rust SDK's semantics (weir_guest::join): two
// sources of one pipeline joined on a key within an event-time range,
// Spark's `left.key = right.key AND right.ts BETWEEN left.ts - before AND
// left.ts + after`, inner or outer.
//
// Each row waits in keyed state until the watermark proves no row of the
// other side can still match it, then leaves it; an outer join emits its
// unmatched rows then (`undefined` for the missing side). A pair is emitted
// once, when its second row arrives. Outputs carry the join key and the
// later of the two rows' event times (an unmatched row's own). Register a
// builder, called with the config at init:
//
//   weir.joined(() => joins.inner("orders", "payments", { beforeMs: 0, afterMs: 60_000,
//     keyBy: joins.jsonKey("order_id"), output: (j) => ... }));
//
// `keyBy` is one function for both sides or a [left, right] pair;
// `output(joined)` returns the output value (bytes or string), `joined`
// having `key` (bytes), `left` and `right` ({value, timestamp} each, or
// undefined). Rows are stored in the Rust SDK's layout.

import { BadRecord, Broken, reason } from "./errors.js";
import { concat, timeBytes, untime } from "./keys.js";
import { Record } from "./record.js";
import * as state from "./state.js";

export const INNER = "inner";
export const LEFT_OUTER = "left-outer";
export const RIGHT_OUTER = "right-outer";
export const FULL_OUTER = "full-outer";
const KEEPS = { [INNER]: [], [LEFT_OUTER]: [0x6c], [RIGHT_OUTER]: [0x72], [FULL_OUTER]: [0x6c, 0x72] };
const TAG = 0x4a; // "J"
const LEFT = 0x6c; // "l"
const RIGHT = 0x72; // "r"
const enc = new TextEncoder();
const dec = new TextDecoder();

function prefix(side, key) {
  const len = new Uint8Array(4);
  new DataView(len.buffer).setUint32(0, key.length);
  return concat(Uint8Array.of(TAG, side), len, key);
}

/** [side, key, time] of a row's state key, or undefined. */
function parse(k) {
  if (k.length < 6 || k[0] !== TAG || (k[1] !== LEFT && k[1] !== RIGHT)) return undefined;
  const n = new DataView(k.buffer, k.byteOffset + 2, 4).getUint32(0);
  if (k.length < 14 + n) return undefined;
  return [k[1], k.subarray(6, 6 + n), untime(k, 6 + n)];
}

const defaultOutput = (j) => {
  const side = (r) => (r === undefined ? "null" : dec.decode(r.value));
  return `{"left":${side(j.left)},"right":${side(j.right)}}`;
};

function recordKey(r) {
  if (r.key === undefined) throw new BadRecord("record has no key to join on");
  return r.key;
}

/** A join of source `left` with source `right` (their [[source]] names). */
export class Join {
  constructor(kind, left, right, { beforeMs, afterMs, keyBy, output } = {}) {
    if (!(kind in KEEPS)) throw new Error(`a join is one of ${Object.keys(KEEPS).join(", ")}, not ${kind}`);
    for (const [name, v] of [["beforeMs", beforeMs], ["afterMs", afterMs]]) {
      if (!(Number.isInteger(v) && v >= 0)) throw new Error(`join ${name} must be a number of ms >= 0, not ${v}`);
    }
    if (left === right) throw new Error(`a join reads two sources, and both sides are "${left}"`);
    const keys = Array.isArray(keyBy) ? keyBy : [keyBy, keyBy];
    Object.assign(this, {
      kind,
      sources: [left, right],
      before: beforeMs,
      after: afterMs,
      keys: keys.map((k) => k ?? recordKey),
      output: output ?? defaultOutput,
      checked: false,
    });
  }

  side() {
    if (!this.checked) {
      if (!state.eventTime()) throw new Broken("a join needs an [event-time] section: rows leave state when the watermark passes them");
      if (state.outputMode() !== "append") throw new Broken('a join emits each row once: it needs output-mode = "append"');
      this.checked = true;
    }
    const source = state.source();
    if (source === undefined) throw new Broken("the host did not say which source this batch came from");
    if (!this.sources.includes(source)) {
      throw new Broken(`a record from source \`${source}\`, which this join does not read: it joins \`${this.sources[0]}\` with \`${this.sources[1]}\` (check the [[source]] names)`);
    }
    return source === this.sources[0] ? LEFT : RIGHT;
  }

  /** Join batch `b` (all from one source) against the other side. */
  processBatch(b, cols, out) {
    if (b.valueEnds.length === 0) return;
    const side = this.side();
    let start = 0;
    for (let i = 0; i < b.valueEnds.length; i++) {
      const end = b.valueEnds[i];
      const value = b.hasValue.length === 0 || b.hasValue[i] ? b.values.subarray(start, end) : undefined;
      start = end;
      const r = new Record(value, i, b);
      const mark = cols.mark();
      try {
        out.record = r;
        this.add(side, r, out);
      } catch (e) {
        if (e instanceof Broken) throw e;
        cols.rollback(mark);
        cols.rejected.push({ index: i, reason: reason(e) });
      }
    }
  }

  add(side, r, out) {
    const k = this.keys[side === LEFT ? 0 : 1](r);
    const key = typeof k === "string" ? enc.encode(k) : k;
    const ts = r.timestamp;
    const value = r.value ?? new Uint8Array(0);
    // The other side's times this row matches; once the watermark passes
    // hi no row to come can match, and the row leaves state.
    const [lo, hi] = side === LEFT ? [ts - this.before, ts + this.after] : [ts - this.after, ts + this.before];
    const other = side === LEFT ? RIGHT : LEFT;
    const mark = KEEPS[this.kind].includes(other);
    const p = prefix(other, key);
    let matched = false;
    for (const [rk, v] of state.scan(concat(p, timeBytes(lo)), concat(p, timeBytes(hi + 1)))) {
      const parsed = parse(rk);
      if (parsed === undefined) continue;
      matched = true;
      const mine = { value, timestamp: ts };
      const theirs = { value: v.subarray(1), timestamp: parsed[2] };
      const [left, right] = side === LEFT ? [mine, theirs] : [theirs, mine];
      this.emit(out, key, left, right, Math.max(ts, parsed[2]));
      if (mark && v[0] !== 1) state.put(rk, concat(Uint8Array.of(1), v.subarray(1)));
    }
    const pos = new Uint8Array(4);
    new DataView(pos.buffer).setUint32(0, r.partition ?? 0);
    const own = concat(prefix(side, key), timeBytes(ts), pos, timeBytes(r.offset));
    state.put(own, concat(Uint8Array.of(matched ? 1 : 0), value));
    state.registerTimer(state.EVENT_TIME, own, hi + 1);
  }

  emit(out, key, left, right, ts) {
    out.emit(this.output({ key, left, right }), { key, timestamp: ts });
  }

  /** A row's time is up: drop it, emitting it first when it matched
   * nothing and its side is kept. */
  onTimer(timer, out) {
    const parsed = timer.domain === state.EVENT_TIME ? parse(timer.key) : undefined;
    if (parsed === undefined) throw new Broken(`unexpected timer at ${timer.time}`);
    const [side, key, ts] = parsed;
    if (KEEPS[this.kind].includes(side)) {
      const v = state.get(timer.key);
      if (v !== undefined && v[0] !== 1) {
        const row = { value: v.subarray(1), timestamp: ts };
        this.emit(out, key, side === LEFT ? row : undefined, side === RIGHT ? row : undefined, ts);
      }
    }
    state.del(timer.key);
  }
}

/** Matched pairs only. */
export const inner = (left, right, opts) => new Join(INNER, left, right, opts);
/** Also every left row that matched nothing. */
export const leftOuter = (left, right, opts) => new Join(LEFT_OUTER, left, right, opts);
/** Also every right row that matched nothing. */
export const rightOuter = (left, right, opts) => new Join(RIGHT_OUTER, left, right, opts);
/** Also every row of either side that matched nothing. */
export const fullOuter = (left, right, opts) => new Join(FULL_OUTER, left, right, opts);

/** A keyBy reading top-level JSON field `field` of the value (a string as
 * is, a number as its text), as a source's key-field does. */
export function jsonKey(field) {
  return (r) => {
    let v;
    try {
      v = JSON.parse(dec.decode(r.value))[field];
    } catch {
      v = undefined;
    }
    if (v === undefined) throw new BadRecord(`no JSON field \`${field}\` to join on`);
    return typeof v === "string" ? v : JSON.stringify(v);
  };
}
