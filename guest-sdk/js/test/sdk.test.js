// The SDK natively: each kind of function over the real column rules.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { beforeEach, test } from "node:test";

import * as weir from "../weir/index.js";
import { reset } from "../weir/register.js";
import * as testing from "../weir/testing.js";

const text = (b) => (b === undefined ? undefined : new TextDecoder().decode(b));

beforeEach(reset);

test("map keeps key, headers and timestamp and passes tombstones", () => {
  weir.map((r) => r.text.toUpperCase());
  const { outputs, rejected } = testing.run([
    { value: "a", key: "k", headers: [["h", "1"]], timestamp: 5 },
    { value: undefined, key: "gone" },
    { value: new Uint8Array([0xff]) },
  ]);
  assert.deepEqual(outputs.map((o) => text(o.value)), ["A", undefined]);
  assert.equal(text(outputs[0].key), "k");
  assert.deepEqual(outputs[0].headers.map((h) => [h.name, text(h.value)]), [["h", "1"]]);
  assert.equal(outputs[0].timestamp, 5);
  assert.equal(text(outputs[1].key), "gone");
  assert.equal(rejected.length, 1);
  assert.equal(rejected[0].index, 2);
  assert.match(rejected[0].reason, /^value is not UTF-8/);
});

test("a plain map encodes strings and bytes alike, around refused records", () => {
  // Plain records (no keys, headers or tombstones) take the batch-encoding path.
  weir.map((r) => {
    if (r.text === "bad") throw new weir.BadRecord("bad");
    return r.text === "raw" ? new Uint8Array([0x52]) : r.text.toUpperCase();
  });
  const ascii = testing.run(["ab", "bad", "cd", ""]);
  assert.deepEqual(ascii.outputs.map((o) => [text(o.value), o.origin]), [["AB", 0], ["CD", 2], ["", 3]]);
  assert.deepEqual(ascii.rejected, [{ index: 1, reason: "bad" }]);
  const wide = testing.values(["é", "x", "日本"]);
  assert.deepEqual(wide, ["É", "X", "日本"]);
  assert.deepEqual(testing.values(["raw", "é"]), ["R", "É"]);
});

test("filter and route", () => {
  weir.filter((r) => r.value.length > 1);
  assert.deepEqual(testing.values(["a", "bb", "ccc"]), ["bb", "ccc"]);
  reset();
  weir.route((r) => (r.value.length > 1 ? "big" : undefined));
  const { outputs } = testing.run(["a", "bb"]);
  assert.deepEqual(outputs.map((o) => [text(o.value), o.output]), [["a", undefined], ["bb", "big"]]);
});

test("flatMap emits many, rolls back a refused record and sets fields", () => {
  weir.flatMap((r, out) => {
    const words = r.text.split(" ").filter(Boolean);
    for (const w of words) out.emit(w, { key: w, timestamp: r.timestamp + 1 });
    if (words.includes("bad")) throw new weir.BadRecord("no bad words");
    if (words.length === 0) out.emitTombstone({ to: "empty" });
  });
  const { outputs, rejected } = testing.run([{ value: "x y", timestamp: 10 }, "ok bad", ""]);
  assert.deepEqual(outputs.map((o) => [text(o.value), text(o.key), o.timestamp, o.origin]), [
    ["x", "x", 11, 0],
    ["y", "y", 11, 0],
    [undefined, undefined, 0, 2],
  ]);
  assert.equal(outputs[2].output, "empty");
  assert.deepEqual(rejected, [{ index: 1, reason: "no bad words" }]);
});

test("any exception refuses the record but Broken stops", () => {
  weir.map((r) => {
    if (r.text === "stop") throw new weir.Broken("out of patience");
    const n = JSON.parse(r.text);
    return String(n * 2);
  });
  const { outputs, rejected } = testing.run(["1", "x"]);
  assert.deepEqual(outputs.map((o) => text(o.value)), ["2"]);
  assert.match(rejected[0].reason, /^SyntaxError: /);
  assert.throws(() => testing.run(["stop"]), /out of patience/);
});

test("a wrong return type is broken with the function named", () => {
  weir.map(function bad() {
    return 42;
  });
  assert.throws(() => testing.run(["a"]), /the value bad returned must be a Uint8Array or a string, not number/);
});

test("config is refused without init and checked with it", () => {
  weir.map((r) => r.value);
  assert.throws(() => testing.run(["a"], [["x", "1"]]), /unknown config key `x`/);
  let factor;
  weir.init((config) => {
    config.only("factor");
    factor = config.integer("factor", 1);
  });
  testing.run(["a"], [["factor", "3"]]);
  assert.equal(factor, 3);
  assert.throws(() => testing.run(["a"], [["fator", "3"]]), /unknown config key `fator`/);
});

test("two registrations are refused", () => {
  weir.map(function one(r) {
    return r.value;
  });
  assert.throws(() => weir.filter(() => true), /one is already registered/);
});

test("metrics natively", () => {
  weir.filter(() => {
    weir.counterAdd("seen");
    return true;
  });
  testing.run(["a", "b"]);
  assert.ok(testing.metrics().counters.seen >= 2);
});

test("record.ascii: every record of an ASCII batch, each record of a mixed one", () => {
  const seen = [];
  weir.map((r) => {
    seen.push(r.ascii);
    return r.value ?? "";
  });
  testing.run([{ value: "ab" }, { value: "cd" }]);
  testing.run([{ value: "ab" }, { value: "wörld" }, { value: undefined }]);
  assert.deepEqual(seen, [true, true, true, false]);
});

function lookup(doc) {
  return doc.missing.field; // the line a refusal names
}

test("an unexpected exception names the user's file, line and function", () => {
  weir.map((r) => (r.text === "boom" ? lookup({}) : r.text));
  const { rejected } = testing.run(["a", "boom"]);
  assert.equal(rejected.length, 1);
  assert.match(rejected[0].reason, /^TypeError: .* at test\/sdk\.test\.js:\d+:\d+ in lookup$/);
  const line = Number(/sdk\.test\.js:(\d+)/.exec(rejected[0].reason)[1]);
  const source = readFileSync(new URL(import.meta.url), "utf8").split("\n");
  assert.match(source[line - 1], /the line a refusal names/);
});

test("jsonField reads one member, refusing what is not a JSON object", () => {
  assert.equal(weir.jsonField('{"id":1,"amount":12.5}', "amount"), 12.5);
  assert.equal(weir.jsonField(new TextEncoder().encode('{"a":"x"}'), "a"), "x");
  assert.equal(weir.jsonField('{"a":1}', "b", null), null);
  assert.throws(() => weir.jsonField('{"a":1}', "b"), (e) => e instanceof weir.BadRecord && /missing field `b`/.test(e.message));
  for (const bad of ["[1]", "7", "null", "{", ""]) {
    assert.throws(() => weir.jsonField(bad, "a"), weir.BadRecord, bad);
  }
  weir.flatMap((r, out) => {
    if (weir.jsonField(r, "amount") >= 10) out.emit(r.value);
  });
  const { outputs, rejected } = testing.run(['{"amount":5}', '{"amount":50}', "no"]);
  assert.deepEqual(outputs.map((o) => text(o.value)), ['{"amount":50}']);
  assert.equal(rejected.length, 1);
});

test("jsonNumber reads a number member per record, NaN where there is none", () => {
  weir.flatMap((r, out) => {
    const n = weir.jsonNumber(r, "amount");
    out.emit(Number.isNaN(n) ? "none" : String(n * 2));
  });
  const { outputs, rejected } = testing.run(['{"amount":5}', '{"amount":"x"}', '{"id":1}', "[1]", "nope", '{"amount":2.5}']);
  assert.deepEqual(outputs.map((o) => text(o.value)), ["10", "none", "none", "5"]);
  assert.deepEqual(rejected.map((r) => [r.index, r.reason]), [[3, "not a JSON object"], [4, "not a JSON object"]]);
});
