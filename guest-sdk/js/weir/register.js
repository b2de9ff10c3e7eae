// Registering the one function of a transform.

import { Broken } from "./errors.js";

let transform;
let initFn;
let onTimerFn;

function register(kind, f) {
  if (typeof f !== "function") throw new Broken(`weir.${kind} takes a function`);
  if (transform) {
    throw new Broken(`a transform registers one function; ${transform[1].name || "one"} is already registered, so weir.${kind} ${f.name || "this one"} cannot be`);
  }
  transform = [kind, f];
  return f;
}

/** `f(record) -> Uint8Array | string`: one output per input with that
 * value, keeping key, headers and timestamp. A record without a value
 * (a tombstone) passes through without calling `f`. */
export const map = (f) => register("map", f);
/** `f(record) -> boolean`: records for which it is true pass through
 * unchanged (tombstones too: their `value` is undefined). */
export const filter = (f) => register("filter", f);
/** `f(record, out)`: emit zero or more records through `out`. */
export const flatMap = (f) => register("flatMap", f);
/** `f(record) -> string | undefined`: the record passes through unchanged to
 * the named output returned, or to the default output. */
export const route = (f) => register("route", f);
/** `f(config) -> Windowed` (weir/windows.js): the transform is that
 * windowed aggregation, built at init from the config. */
export const windowed = (f) => register("windowed", f);
/** `f(config) -> Join` (weir/joins.js): the transform is that stream-stream
 * join, built at init from the config. */
export const joined = (f) => register("joined", f);
/** `f(config)`, called once before any record with the pipeline's
 * `[transform.config]`; throw to refuse it (say which key and why). */
export function init(f) {
  initFn = f;
  return f;
}

/** `f(timer, out)`, called for each fired timer (weir/state.js registers
 * them) after the batch's records; emits through `out` like a flatMap
 * (key: the timer's; timestamp: its time). */
export function onTimer(f) {
  onTimerFn = f;
  return f;
}

export function registeredOnTimer() {
  return onTimerFn;
}

export function registered() {
  if (!transform) throw new Broken("no transform registered: call weir.map, weir.filter, weir.flatMap or weir.route with your function");
  return transform;
}

export function registeredInit() {
  return initFn;
}

/** Forget the registration (tests register several transforms). */
export function reset() {
  transform = undefined;
  initFn = undefined;
  onTimerFn = undefined;
}
