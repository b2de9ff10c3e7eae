// Byte helpers for state keys, shared by windows.js and joins.js.

/** 8 bytes that sort like the time (big-endian, sign bit flipped). */
export function timeBytes(t) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(t) + (1n << 63n)));
  return b;
}

/** The time `timeBytes` wrote at `at` in `b`. */
export const untime = (b, at) => Number(new DataView(b.buffer, b.byteOffset + at, 8).getBigUint64(0) - (1n << 63n));

/** The parts, one after another. */
export function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
