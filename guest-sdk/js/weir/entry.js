// The component's exports: `weir build` makes this module the entry that
// componentize-js builds; it imports the user's ../app.js, whose calls
// register the transform, and converts between the contract's types and
// the SDK's.

import { numbers } from "weir:transform/json@0.2.0";
import { log } from "weir:transform/log@0.2.0";
import { counterAdd, gaugeSet } from "weir:transform/metrics@0.2.0";

import "../app.js";
import { setHost } from "./host.js";
import { runBatch, runInit } from "./run.js";

setHost({ log, counterAdd, gaugeSet, jsonNumbers: numbers });

export function outputBatch(cols, inputTimestamps) {
  return {
    values: cols.values(),
    valueEnds: Uint32Array.from(cols.valueEnds),
    hasValue: cols.hasValue,
    keys: cols.keys(),
    keyEnds: Uint32Array.from(cols.keyEnds),
    hasKey: cols.hasKey,
    headers: cols.headers,
    headerEnds: Uint32Array.from(cols.headerEnds),
    timestamps: cols.timestampColumn(inputTimestamps),
    origins: cols.originColumn(),
    outputs: cols.outputs,
    routes: Uint32Array.from(cols.routes),
    rejected: cols.rejected,
  };
}

export const transform = {
  init(config) {
    try {
      runInit(config);
    } catch (e) {
      throw e instanceof Error ? e.message : String(e);
    }
  },

  processBatch(input) {
    try {
      return outputBatch(runBatch(input), input.timestamps);
    } catch (e) {
      throw { tag: "broken", val: e instanceof Error ? e.message : String(e) };
    }
  },
};

/** A batch of one record, in the contract's batch fields. */
function oneRecord(r) {
  const value = r.value ?? new Uint8Array(0);
  const key = r.key ?? new Uint8Array(0);
  return {
    partition: r.position.partition,
    values: value,
    valueEnds: [value.length],
    hasValue: r.value === undefined ? [false] : [],
    keys: key,
    keyEnds: r.key === undefined ? [] : [key.length],
    hasKey: r.key === undefined ? [] : [true],
    headers: r.headers,
    headerEnds: r.headers.length ? [r.headers.length] : [],
    timestamps: [r.timestamp],
    offsets: [r.position.offset],
  };
}

export const recordTransform = {
  // The batch path over a batch of one, so both calls give the same answer.
  processRecord(input) {
    let cols;
    try {
      cols = runBatch(oneRecord(input));
    } catch (e) {
      throw { tag: "broken", val: e instanceof Error ? e.message : String(e) };
    }
    if (cols.rejected.length) throw { tag: "bad-record", val: cols.rejected[0].reason };
    return cols.rows().map(({ output, key, value, headers, timestamp }) => ({ output, key, value, headers, timestamp }));
  },
};

