// Keyed state, timers and the batch's clocks, for stateful transforms.
//
// An app.js that imports this module is built stateful by `weir build`
// (world `full-transformer`): the host routes every record to a state
// partition by the pipeline's `[state] key-field` (or record key), so a
// key's records always meet the same state, checkpointed with every batch
// or epoch and restored exactly after a crash. Inside a component
// entry_stateful.js plugs in weir's imports; natively (tests) state and
// timers live in maps, and weir/testing.js sets the clocks and fires timers.

export const EVENT_TIME = "event-time";
export const PROCESSING_TIME = "processing-time";

const enc = new TextEncoder();
const bytes = (v) => (typeof v === "string" ? enc.encode(v) : v);
// Native map keys: the bytes as a Latin-1 string (one char per byte).
const str = (b) => String.fromCharCode(...b);
const unstr = (s) => Uint8Array.from(s, (c) => c.charCodeAt(0));

export const native = {
  state: new Map(),
  timers: new Map(),
  watermark: undefined,
  processingTime: 0,
  outputMode: "append",
  eventTime: true,
  source: undefined,
};

function domainOf(d) {
  if (d !== EVENT_TIME && d !== PROCESSING_TIME) throw new Error(`a time domain is "${EVENT_TIME}" or "${PROCESSING_TIME}", not ${JSON.stringify(d)}`);
  return d;
}

const nativeBackend = {
  get: (k) => native.state.get(str(k)),
  put: (k, v) => native.state.set(str(k), Uint8Array.from(v)),
  delete: (k) => native.state.delete(str(k)),
  prefix: (p) =>
    [...native.state.entries()]
      .filter(([k]) => k.startsWith(str(p)))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => [unstr(k), v]),
  scan: (start, end) =>
    [...native.state.entries()]
      .filter(([k]) => k >= str(start) && (end === undefined || k < str(end)))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => [unstr(k), v]),
  registerTimer: (d, k, at) => native.timers.set(`${d}|${at}|${str(k)}`, { domain: d, key: Uint8Array.from(k), time: at }),
  deleteTimer: (d, k, at) => native.timers.delete(`${d}|${at}|${str(k)}`),
  watermark: () => native.watermark,
  processingTime: () => native.processingTime,
  outputMode: () => native.outputMode,
  eventTime: () => native.eventTime,
  source: () => native.source,
};

let backend = nativeBackend;

export function setStateBackend(b) {
  backend = b;
}

/** The value (Uint8Array) stored under `key` (bytes or string), or undefined. */
export const get = (key) => backend.get(bytes(key));
/** Store `value` under `key` (bytes or strings). */
export const put = (key, value) => backend.put(bytes(key), bytes(value));
export const del = (key) => backend.delete(bytes(key));
/** `[key, value]` pairs whose key starts with `prefix`, in key order. */
export const prefix = (p) => backend.prefix(bytes(p));
/** `[key, value]` pairs with `start <= key < end` (no upper bound when
 * `end` is undefined), in key order. */
export const scan = (start, end) => backend.scan(bytes(start), end === undefined ? undefined : bytes(end));
/** Call the weir.onTimer function with `key` once `domain`'s clock reaches
 * `at` (ms); registering the same timer twice keeps one. */
export const registerTimer = (domain, key, at) => backend.registerTimer(domainOf(domain), bytes(key), Number(at));
export const deleteTimer = (domain, key, at) => backend.deleteTimer(domainOf(domain), bytes(key), Number(at));
/** The batch's event-time watermark (ms), or undefined before any event time. */
export const watermark = () => backend.watermark();
/** The batch's processing time (ms), the same when a batch is re-run. */
export const processingTime = () => backend.processingTime();
/** The pipeline's output-mode: "append", "update" or "complete". */
export const outputMode = () => backend.outputMode();
/** Whether the pipeline has an [event-time] section. */
export const eventTime = () => backend.eventTime();
/** The name of the source whose records the current call holds (its
 * [[source]] name, or source-<index>); undefined while timers fire. */
export const source = () => backend.source();
