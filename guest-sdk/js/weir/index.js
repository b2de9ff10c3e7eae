// Write weir stream transforms in JavaScript: one plain function per
// record, registered with weir.map / filter / flatMap / route.
//
//   import * as weir from "./weir/index.js";
//   weir.map((record) => record.text.toUpperCase());
//
// `weir build` makes the project a component (componentize-js); this SDK
// runs the per-record loop over weir's columnar batches. `node --test`
// runs the same code natively through weir/testing.js.

export { BadRecord, Broken } from "./errors.js";
export { Config, counterAdd, gaugeSet, logDebug, logError, logInfo, logWarn } from "./host.js";
export { jsonField, jsonNumber } from "./json.js";
export { Output, Record } from "./record.js";
export { filter, flatMap, init, joined, map, onTimer, route, windowed } from "./register.js";
