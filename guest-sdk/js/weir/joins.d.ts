// Types of weir/joins.js.
import type { Joined, Record } from "./index.js";

export const INNER: "inner";
export const LEFT_OUTER: "left-outer";
export const RIGHT_OUTER: "right-outer";
export const FULL_OUTER: "full-outer";
export type JoinKind = "inner" | "left-outer" | "right-outer" | "full-outer";

/** One side's row of a joined output. */
export interface Row {
  value: Uint8Array;
  /** Its event time (ms). */
  timestamp: number;
}

/** A matched pair, or an outer join's unmatched row. */
export interface Pair {
  key: Uint8Array;
  left?: Row;
  right?: Row;
}

export interface JoinOptions {
  /** A right row matches a left row at `t` when its time is in
   * [t - beforeMs, t + afterMs]. */
  beforeMs: number;
  afterMs: number;
  /** The join key: one function for both sides, or [left, right] (default: the record key). */
  keyBy?: ((record: Record) => string | Uint8Array) | [(record: Record) => string | Uint8Array, (record: Record) => string | Uint8Array];
  /** The output value of a pair (default: {"left":<value>,"right":<value>}). */
  output?: (pair: Pair) => string | Uint8Array;
}

export class Join implements Joined {
  constructor(kind: JoinKind, left: string, right: string, options: JoinOptions);
}
export function inner(left: string, right: string, options: JoinOptions): Join;
export function leftOuter(left: string, right: string, options: JoinOptions): Join;
export function rightOuter(left: string, right: string, options: JoinOptions): Join;
export function fullOuter(left: string, right: string, options: JoinOptions): Join;
export function jsonKey(field: string): (record: Record) => string;
