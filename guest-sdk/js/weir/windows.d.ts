// Types of weir/windows.js.
import type { Record, Windowed } from "./index.js";

/** An aggregate: how records fold into a JSON-serializable accumulator. */
export interface Aggregate<Acc> {
  zero(): Acc;
  add(acc: Acc, record: Record): Acc;
  merge(a: Acc, b: Acc): Acc;
  result(key: Uint8Array, start: number, end: number, acc: Acc): string | Uint8Array;
}

export interface WindowOptions {
  /** The key to window by (default: the record key). */
  keyBy?: (record: Record) => string | Uint8Array;
}

export function count(): Aggregate<number>;
export function jsonString(key: Uint8Array): string;
export function tumbling<Acc>(sizeMs: number, agg: Aggregate<Acc>, options?: WindowOptions): Windowed;
export function sliding<Acc>(sizeMs: number, slideMs: number, agg: Aggregate<Acc>, options?: WindowOptions): Windowed;
export function session<Acc>(gapMs: number, agg: Aggregate<Acc>, options?: WindowOptions): Windowed;
