// Reading one top-level member of a JSON record, as the other SDKs do
// (Python's json_field, Go's JSONField, C's weir_json_get, Rust's
// json::field). JSON.parse runs natively in the component (SpiderMonkey's
// C++), so the record is parsed in full and checked; what this adds is one
// rule for every language: a value that is not a JSON object refuses the
// record, and so does a missing member unless a fallback is given.

import { BadRecord } from "./errors.js";
import { hostJsonNumbers } from "./host.js";
import { Record, decodeText } from "./record.js";

const NONE = Symbol("none");

/** The top-level member `name` of the JSON object in `source` (a Record,
 * a Uint8Array or a string), as JSON.parse gives it (the last one if the
 * name repeats, as JSON.parse keeps). A missing member gives `fallback`,
 * or refuses the record when there is none. */
export function jsonField(source, name, fallback = NONE) {
  let text;
  if (source instanceof Record) text = source.text;
  else if (typeof source === "string") text = source;
  else if (ArrayBuffer.isView(source)) text = decodeText(source);
  else throw new BadRecord("record has no value");
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new BadRecord(`not a JSON object: ${e.message}`);
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new BadRecord("not a JSON object");
  if (Object.prototype.hasOwnProperty.call(doc, name)) return doc[name];
  if (fallback !== NONE) return fallback;
  throw new BadRecord(`missing field \`${name}\``);
}

/** The number in member `name` of `record`'s JSON object, NaN where the
 * member is absent or not a number (NaN compares false with everything,
 * so `n >= 10` is false). A value that is not a JSON object refuses the
 * record. In a component the host reads the member of every record of the
 * batch in one call, the first time a record of it asks (native JSON
 * parsing, no JavaScript object per record), so a function per record
 * runs as fast as a batch function would; natively it is JSON.parse. */
export function jsonNumber(record, name) {
  if (record.value === undefined) throw new BadRecord("record has no value");
  const batch = record.batch;
  batch.jsonNumbers ??= new Map();
  let column = batch.jsonNumbers.get(name);
  if (column === undefined) {
    column = numbers(batch, name);
    batch.jsonNumbers.set(name, column);
  }
  if (column.notObjects.has(record.index)) throw new BadRecord("not a JSON object");
  return column.values[record.index];
}

function numbers(batch, name) {
  const read = hostJsonNumbers();
  if (read !== undefined) {
    const col = read(batch.values, batch.valueEnds, name);
    return { values: col.values, notObjects: new Set(col.notObjects) };
  }
  const values = new Float64Array(batch.valueEnds.length);
  const notObjects = new Set();
  let start = 0;
  for (let i = 0; i < batch.valueEnds.length; i++) {
    const end = batch.valueEnds[i];
    let doc;
    try {
      doc = JSON.parse(decodeText(batch.values.subarray(start, end)));
    } catch {
      doc = undefined;
    }
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
      notObjects.add(i);
      values[i] = NaN;
    } else values[i] = typeof doc[name] === "number" ? doc[name] : NaN;
    start = end;
  }
  return { values, notObjects };
}
