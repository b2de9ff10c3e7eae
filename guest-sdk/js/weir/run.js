// Running the registered function over a batch. Shared by the component's
// exports (entry.js) and weir/testing.js.

import { Columns } from "./columns.js";
import { BadRecord, Broken } from "./errors.js";
import { KEEP, Output, Record, asBytes } from "./record.js";
import { registered } from "./register.js";

function reason(e) {
  if (e instanceof BadRecord) return e.message || "bad record";
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}

/** The output Columns of batch `b` (the contract's batch fields, camelCase);
 * throws Broken. */
export function runBatch(b) {
  const [kind, f] = registered();
  const n = b.valueEnds.length;
  const cols = new Columns(n);
  const out = new Output(cols);
  const { values, valueEnds, hasValue } = b;
  let start = 0;
  for (let i = 0; i < n; i++) {
    const end = valueEnds[i];
    const value = hasValue.length === 0 || hasValue[i] ? values.subarray(start, end) : undefined;
    start = end;
    const record = new Record(value, i, b);
    out.record = record;
    const mark = cols.mark();
    try {
      if (kind === "map") {
        if (value === undefined) out.forward();
        else out.push(asBytes(f(record), `the value ${f.name || "the map function"} returned`), KEEP, KEEP, undefined, undefined);
      } else if (kind === "filter") {
        if (f(record)) out.forward();
      } else if (kind === "route") {
        out.forward(f(record));
      } else {
        f(record, out);
      }
    } catch (e) {
      if (e instanceof Broken) throw e;
      cols.rollback(mark);
      cols.rejected.push({ index: i, reason: reason(e) });
    }
  }
  return cols;
}
