// What the host offers a transform: config, logging and metrics. Inside a
// component entry.js plugs in weir's imports; natively (tests) lines are
// printed and metrics kept for weir/testing.js.

export const nativeMetrics = { counters: {}, gauges: {} };

let host = {
  log: (level, message) => console.log(`[${level}] ${message}`),
  counterAdd: (name, delta) => {
    nativeMetrics.counters[name] = (nativeMetrics.counters[name] ?? 0) + Number(delta);
  },
  gaugeSet: (name, value) => {
    nativeMetrics.gauges[name] = value;
  },
};

export function setHost(h) {
  host = h;
}

/** The host's reader of one JSON number member of every record of a batch
 * (`weir:transform/json`), or undefined natively. */
export const hostJsonNumbers = () => host.jsonNumbers;

/** The pipeline's `[transform.config]`; values are strings. */
export class Config {
  constructor(pairs) {
    this.pairs = new Map(pairs);
  }
  get(key, fallback) {
    return this.pairs.has(key) ? this.pairs.get(key) : fallback;
  }
  /** The value of `key`; refuses the config when it is missing. */
  required(key) {
    if (!this.pairs.has(key)) throw new Error(`missing config key \`${key}\``);
    return this.pairs.get(key);
  }
  integer(key, fallback) {
    if (!this.pairs.has(key)) return fallback;
    const v = this.pairs.get(key);
    if (!/^-?\d+$/.test(v)) throw new Error(`config key \`${key}\`: ${JSON.stringify(v)} is not an integer`);
    return Number(v);
  }
  /** A duration such as 10s, 500ms, 2m or 1h, in ms. */
  durationMs(key, fallback) {
    if (!this.pairs.has(key)) return fallback;
    const v = this.pairs.get(key);
    const m = /^(\d+)\s*(ms|s|m|h)$/.exec(v);
    if (!m) throw new Error(`config key \`${key}\`: ${JSON.stringify(v)} is not a duration (e.g. 500ms, 10s, 2m, 1h)`);
    return Number(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000 }[m[2]];
  }
  /** Refuse keys other than `keys` (catches typos). */
  only(...keys) {
    for (const k of this.pairs.keys()) {
      if (!keys.includes(k)) throw new Error(`unknown config key \`${k}\` (known: ${keys.join(", ") || "none"})`);
    }
  }
}

export const logDebug = (m) => host.log("debug", String(m));
export const logInfo = (m) => host.log("info", String(m));
export const logWarn = (m) => host.log("warn", String(m));
export const logError = (m) => host.log("error", String(m));
/** Add `delta` to counter `name`; progress reports and /metrics show it. */
export const counterAdd = (name, delta = 1) => host.counterAdd(name, BigInt(delta));
export const gaugeSet = (name, value) => host.gaugeSet(name, Number(value));
