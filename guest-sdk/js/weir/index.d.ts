// Types of weir's JavaScript SDK (weir/index.js).

export interface Header {
  name: string;
  value: Uint8Array;
}

/** One input record; `value` is undefined for a record without one (a
 * tombstone). Valid during the call it is passed to: the SDK may reuse the
 * object for the next record, so copy what you keep. */
export declare class Record {
  readonly value: Uint8Array | undefined;
  readonly index: number;
  /** The value as UTF-8 text; a value that is not refuses the record. */
  readonly text: string;
  /** True when the value is ASCII (checked once per batch); false for a
   * record without a value. */
  readonly ascii: boolean;
  readonly key: Uint8Array | undefined;
  readonly headers: Header[];
  header(name: string): Uint8Array | undefined;
  /** Event time, ms since the Unix epoch. */
  readonly timestamp: number;
  readonly offset: number;
  readonly partition: number;
}

export interface EmitOptions {
  /** Defaults to the input record's key; null or undefined for none. */
  key?: Uint8Array | string | null;
  /** Defaults to the input record's headers. */
  headers?: { name: string; value: Uint8Array | string }[];
  /** Event time in ms; defaults to the input record's. */
  timestamp?: number;
  /** A named output; defaults to the default output. */
  to?: string;
}

/** Where a flatMap function writes the outputs of one record. */
export declare class Output {
  readonly record: Record;
  emit(value: Uint8Array | string, options?: EmitOptions): void;
  emitTombstone(options?: EmitOptions): void;
  forward(to?: string): void;
}

/** The pipeline's `[transform.config]`; values are strings. */
export declare class Config {
  get(key: string, fallback?: string): string | undefined;
  required(key: string): string;
  integer(key: string, fallback: number): number;
  /** A duration such as 10s, 500ms, 2m or 1h, in ms. */
  durationMs(key: string, fallback: number): number;
  only(...keys: string[]): void;
}

/** A bad record: refused with this reason; the pipeline's on-error decides. */
export declare class BadRecord extends Error {}
/** The transform cannot go on: the pipeline stops. */
export declare class Broken extends Error {}

export function map(f: (record: Record) => Uint8Array | string): typeof f;
export function filter(f: (record: Record) => boolean): typeof f;
export function flatMap(f: (record: Record, out: Output) => void): typeof f;
export function route(f: (record: Record) => string | undefined): typeof f;
export function init(f: (config: Config) => void): typeof f;

/** A fired timer (see weir/state.js). */
export interface Timer {
  key: Uint8Array;
  time: number;
  domain: "event-time" | "processing-time";
}
export function onTimer(f: (timer: Timer, out: Output) => void): typeof f;

/** The top-level member `name` of the JSON object in `source`; a value
 * that is not a JSON object refuses the record, and so does a missing
 * member unless `fallback` is given. */
export function jsonField(source: Record | Uint8Array | string, name: string, fallback?: unknown): unknown;

/** The number in member `name` of the record's JSON object, NaN where it is
 * absent or not a number; a value that is not a JSON object refuses the
 * record. The host reads the member for the whole batch in one call. */
export function jsonNumber(record: Record, name: string): number;

export function logDebug(message: string): void;
export function logInfo(message: string): void;
export function logWarn(message: string): void;
export function logError(message: string): void;
export function counterAdd(name: string, delta?: number): void;
export function gaugeSet(name: string, value: number): void;

/** A windowed aggregation (weir/windows.js). */
export interface Windowed {}
/** `f(config)` returns the windowed aggregation the transform is. */
export function windowed(f: (config: Config) => Windowed): typeof f;

/** A stream-stream join (weir/joins.js). */
export interface Joined {}
/** `f(config)` returns the join the transform is. */
export function joined(f: (config: Config) => Joined): typeof f;
