// Keyed state and timers natively: a tumbling count per key written with
// weir/state.js and weir.onTimer directly.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import * as weir from "../weir/index.js";
import { reset } from "../weir/register.js";
import * as state from "../weir/state.js";
import * as testing from "../weir/testing.js";

const text = (b) => new TextDecoder().decode(b);
const SIZE = 10;
const slot = (key, start) => `${key}\u0000${start}`;
const stored = (k) => Number(text(state.get(k) ?? new Uint8Array(0)) || 0);

beforeEach(() => {
  reset();
  testing.resetState();
  weir.flatMap((record) => {
    const key = JSON.parse(record.text).key;
    if (key === undefined) throw new weir.BadRecord("no key");
    const start = record.timestamp - (record.timestamp % SIZE);
    state.put(slot(key, start), String(stored(slot(key, start)) + 1));
    state.registerTimer(state.EVENT_TIME, key, start + SIZE);
  });
  weir.onTimer((timer, out) => {
    const start = timer.time - SIZE;
    const key = text(timer.key);
    const n = stored(slot(key, start));
    state.del(slot(key, start));
    out.emit(JSON.stringify({ key, start, end: timer.time, count: n }));
  });
});

test("timers fire once when the watermark passes them", () => {
  const recs = [["a", 1], ["b", 2], ["a", 5], ["a", 11]].map(([k, t]) => ({ value: JSON.stringify({ key: k, ts: t }), timestamp: t }));
  const { outputs, rejected } = testing.run(recs);
  assert.deepEqual([outputs, rejected], [[], []]);
  let fired = testing.fireTimers({ watermark: 10 }).outputs;
  assert.deepEqual(fired.map((o) => text(o.value)).sort(), ['{"key":"a","start":0,"end":10,"count":2}', '{"key":"b","start":0,"end":10,"count":1}']);
  assert.deepEqual(fired.map((o) => text(o.key)), ["a", "b"]);
  assert.deepEqual(testing.fireTimers({ watermark: 15 }).outputs, []);
  fired = testing.fireTimers({ watermark: 20 }).outputs;
  assert.deepEqual(fired.map((o) => text(o.value)), ['{"key":"a","start":10,"end":20,"count":1}']);
  assert.equal(state.native.state.size, 0);
});

test("a bad record is refused", () => {
  const { rejected } = testing.run([{ value: "{}", timestamp: 1 }]);
  assert.deepEqual(rejected, [{ index: 0, reason: "no key" }]);
  assert.equal(state.native.timers.size, 0);
});
