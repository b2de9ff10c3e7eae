// One input record: a view into the batch it arrived in. `value` is a
// Uint8Array, or undefined for a record without one (a tombstone). Valid
// during its call only: a plain map moves one object along the batch.

import { BadRecord, Broken } from "./errors.js";

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

export class Record {
  constructor(value, index, batch) {
    this.value = value;
    this.index = index;
    this.batch = batch;
  }

  /** The value as UTF-8 text; a value that is not refuses the record. */
  get text() {
    if (this.value === undefined) throw new BadRecord("record has no value");
    const ascii = asciiText(this.batch);
    if (ascii !== null) {
      const start = this.value.byteOffset - this.batch.values.byteOffset;
      return ascii.substring(start, start + this.value.length);
    }
    return decodeText(this.value);
  }

  /** True when the value is ASCII (so `text.toUpperCase()` and friends
   * touch ASCII letters only). Checked once per batch: every record of an
   * all-ASCII batch is. A record without a value is not. */
  get ascii() {
    if (this.value === undefined) return false;
    if (allAscii(this.batch)) return true;
    return this.value.every((b) => b < 0x80);
  }

  /** Uint8Array, or undefined for a record without a key. */
  get key() {
    const b = this.batch;
    const i = this.index;
    if (b.keyEnds.length === 0 || !b.hasKey[i]) return undefined;
    return b.keys.subarray(i ? b.keyEnds[i - 1] : 0, b.keyEnds[i]);
  }

  /** `[{name, value}]` in order. */
  get headers() {
    const b = this.batch;
    const i = this.index;
    if (b.headerEnds.length === 0) return [];
    return b.headers.slice(i ? b.headerEnds[i - 1] : 0, b.headerEnds[i]);
  }

  /** The first header called `name`, or undefined. */
  header(name) {
    return this.headers.find((h) => h.name === name)?.value;
  }

  /** Event time, ms since the Unix epoch (a Number). */
  get timestamp() {
    return Number(this.batch.timestamps[this.index]);
  }

  get offset() {
    return Number(this.batch.offsets[this.index]);
  }

  get partition() {
    return this.batch.partition;
  }
}

/** The batch's values decoded once, when they are all ASCII (then byte
 * offsets are string offsets), else null; kept on the batch. Natively
 * (node) decoding a batch beats decoding each record. In a component the
 * lifted bytes come from another realm, `instanceof` is false and each
 * record is decoded: there that measured faster (slices of the decoded
 * batch slowed `toUpperCase` and `JSON.parse`). */
function asciiText(batch) {
  if (batch.asciiText === undefined) {
    let text = null;
    if (batch.values instanceof Uint8Array) {
      try {
        text = utf8.decode(batch.values);
      } catch {
        text = null;
      }
    }
    // Equal lengths: every character was one byte.
    batch.asciiText = text !== null && text.length === batch.values.length ? text : null;
  }
  return batch.asciiText;
}

/** Whether every value byte of the batch is ASCII: one native decode per
 * batch, kept on it. (Not `asciiText`: in a component the lifted bytes
 * come from another realm, and there slicing the decoded batch measured
 * slower than decoding each record.) */
function allAscii(batch) {
  if (batch.allAscii === undefined) {
    let ascii = false;
    if (ArrayBuffer.isView(batch.values)) {
      try {
        ascii = utf8.decode(batch.values).length === batch.values.length;
      } catch {
        ascii = false;
      }
    }
    batch.allAscii = ascii;
  }
  return batch.allAscii;
}

/** `bytes` as UTF-8 text; bytes that are not refuse the record. */
export function decodeText(bytes) {
  try {
    return utf8.decode(bytes);
  } catch (e) {
    throw new BadRecord(`value is not UTF-8: ${e.message}`);
  }
}

/** `v` as bytes: Uint8Array as is, strings as UTF-8. */
export function asBytes(v, what) {
  if (v instanceof Uint8Array) return v;
  // Byte arrays lifted by the component runtime may come from another realm.
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === "string") return encoder.encode(v);
  throw new Broken(`${what} must be a Uint8Array or a string, not ${v === null ? "null" : typeof v}`);
}

/** Default of `emit`'s key and headers: the input record's. */
export const KEEP = Symbol("keep");

/** Where a flatMap function writes the outputs of one record. */
export class Output {
  constructor(cols) {
    this.cols = cols;
    this.record = undefined;
  }

  /** Emit `value`; key and headers default to the input record's,
   * `timestamp` (ms) to its; `to` names an output. */
  emit(value, { key = KEEP, headers = KEEP, timestamp, to } = {}) {
    this.push(asBytes(value, "an emitted value"), key, headers, timestamp, to);
  }

  /** Emit a record without a value (it deletes its key from a compacted
   * Kafka topic). */
  emitTombstone({ key = KEEP, headers = KEEP, timestamp, to } = {}) {
    this.push(undefined, key, headers, timestamp, to);
  }

  /** Pass the input record through unchanged. */
  forward(to) {
    this.push(this.record.value, KEEP, KEEP, undefined, to ?? undefined);
  }

  push(value, key, headers, timestamp, to) {
    const r = this.record;
    const k = key === KEEP ? r.key : key == null ? undefined : asBytes(key, "a key");
    const h = headers === KEEP ? r.headers : headers.map(({ name, value }) => ({ name: String(name), value: asBytes(value, "a header value") }));
    this.cols.push(r.index, value, k, h, timestamp, to);
  }
}
