// The output columns of one call, built record by record under the
// contract's rules (wit/transform.wit): an optional column stays empty
// while every record has its default there, and is back-filled at the
// first record that differs.

import { Broken } from "./errors.js";

export class Columns {
  constructor(inputs) {
    this.inputs = inputs;
    this.chunks = [];
    this.bytes = 0;
    this.valueEnds = [];
    this.hasValue = [];
    this.keyChunks = [];
    this.keyBytes = 0;
    this.keyEnds = [];
    this.hasKey = [];
    this.headers = []; // {name, value}
    this.headerEnds = [];
    this.timestamps = null; // Map: output index -> explicit timestamp (bigint)
    this.origins = [];
    this.inOrder = true;
    this.outputs = [];
    this.routes = [];
    this.rejected = []; // {index, reason}
  }

  mark() {
    return [this.valueEnds.length, this.chunks.length, this.bytes, this.keyChunks.length, this.keyBytes, this.headers.length];
  }

  rollback([n, nc, nb, nkc, nkb, nh]) {
    this.chunks.length = nc;
    this.bytes = nb;
    this.keyChunks.length = nkc;
    this.keyBytes = nkb;
    this.headers.length = nh;
    for (const col of [this.valueEnds, this.hasValue, this.keyEnds, this.hasKey, this.headerEnds, this.origins, this.routes]) {
      if (col.length > n) col.length = n;
    }
    if (this.timestamps) for (const k of [...this.timestamps.keys()]) if (k >= n) this.timestamps.delete(k);
    this.inOrder = this.origins.every((o, i) => o === i);
  }

  push(origin, value, key, headers, timestamp, to) {
    const n = this.valueEnds.length;
    if (value === undefined) {
      if (this.hasValue.length === 0) this.hasValue = new Array(n).fill(true);
      this.hasValue.push(false);
    } else {
      this.chunks.push(value);
      this.bytes += value.length;
      if (this.hasValue.length) this.hasValue.push(true);
    }
    this.valueEnds.push(this.bytes);
    if (key !== undefined || this.keyEnds.length) {
      if (this.keyEnds.length === 0) {
        this.keyEnds = new Array(n).fill(0);
        this.hasKey = new Array(n).fill(false);
      }
      if (key !== undefined) {
        this.keyChunks.push(key);
        this.keyBytes += key.length;
      }
      this.keyEnds.push(this.keyBytes);
      this.hasKey.push(key !== undefined);
    }
    if (headers.length || this.headerEnds.length) {
      if (this.headerEnds.length === 0) this.headerEnds = new Array(n).fill(0);
      for (const h of headers) this.headers.push(h);
      this.headerEnds.push(this.headers.length);
    }
    if (timestamp !== undefined) {
      if (!this.timestamps) this.timestamps = new Map();
      this.timestamps.set(n, BigInt(timestamp));
    }
    if (origin !== n) this.inOrder = false;
    this.origins.push(origin);
    if (to !== undefined || this.routes.length) {
      let r = 0;
      if (to !== undefined) {
        if (typeof to !== "string" || to === "") throw new Broken(`an output name must be a non-empty string, not ${String(to)}`);
        r = this.outputs.indexOf(to) + 1;
        if (r === 0) r = this.outputs.push(to);
      }
      if (this.routes.length === 0) this.routes = new Array(n).fill(0);
      this.routes.push(r);
    }
  }

  values() {
    return concat(this.chunks, this.bytes);
  }

  keys() {
    return concat(this.keyChunks, this.keyBytes);
  }

  /** The full timestamp column, or empty when every output keeps its input's. */
  timestampColumn(inputTimestamps) {
    if (!this.timestamps || this.timestamps.size === 0) return new BigInt64Array(0);
    const ts = BigInt64Array.from(this.origins, (o) => inputTimestamps[o]);
    for (const [i, t] of this.timestamps) ts[i] = t;
    return ts;
  }

  /** Each output record as `{origin, output, key, value, headers,
   * timestamp}`: `value` undefined for a tombstone, `timestamp` (bigint)
   * undefined when it keeps its input's. */
  rows() {
    const values = this.values();
    const keys = this.keys();
    let h0 = 0;
    return this.valueEnds.map((end, i) => {
      const hasKey = this.keyEnds.length && this.hasKey[i];
      const present = this.hasValue.length === 0 || this.hasValue[i];
      const h1 = this.headerEnds.length ? this.headerEnds[i] : 0;
      const route = this.routes.length ? this.routes[i] : 0;
      const row = {
        origin: this.origins[i],
        output: route ? this.outputs[route - 1] : undefined,
        key: hasKey ? keys.slice(i ? this.keyEnds[i - 1] : 0, this.keyEnds[i]) : undefined,
        value: present ? values.slice(i ? this.valueEnds[i - 1] : 0, end) : undefined,
        headers: this.headers.slice(h0, h1),
        timestamp: this.timestamps?.get(i),
      };
      h0 = h1;
      return row;
    });
  }

  /** Empty when output i came from input i for every input. */
  originColumn() {
    if (this.inOrder && this.origins.length === this.inputs) return new Uint32Array(0);
    return Uint32Array.from(this.origins);
  }
}

function concat(chunks, total) {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
