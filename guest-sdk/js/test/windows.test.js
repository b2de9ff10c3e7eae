// Window helpers natively, against straightforward references.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import * as weir from "../weir/index.js";
import { reset } from "../weir/register.js";
import * as testing from "../weir/testing.js";
import * as windows from "../weir/windows.js";

const text = (b) => new TextDecoder().decode(b);
const byKey = (r) => JSON.parse(r.text).key;
const sorted = (xs) => xs.map((x) => JSON.stringify(x)).sort();

beforeEach(() => {
  reset();
  testing.resetState();
});

// Deterministic pseudo-random events: [key, ts].
function events(n, spread = 50, keys = 3) {
  let x = 7;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: n }, () => [`k${next() % keys}`, (next() % spread) * 10]);
}

// Run the events in batches, then fire every timer; all outputs' values.
function feed(evs, batch = 7) {
  const outs = [];
  for (let i = 0; i < evs.length; i += batch) {
    const recs = evs.slice(i, i + batch).map(([k, t]) => ({ value: JSON.stringify({ key: k, ts: t }), timestamp: t }));
    const { outputs, rejected } = testing.run(recs);
    assert.deepEqual(rejected, []);
    outs.push(...outputs);
  }
  outs.push(...testing.fireTimers({ watermark: 1e9 }).outputs);
  return outs.map((o) => JSON.parse(text(o.value)));
}

test("tumbling and sliding counts equal a reference", () => {
  const evs = events(200);
  for (const [size, slide] of [[100, 100], [100, 30]]) {
    reset();
    testing.resetState();
    weir.windowed(() => windows.sliding(size, slide, windows.count(), { keyBy }));
    const want = new Map();
    for (const [k, t] of evs) {
      for (let s = t - (t % slide); s + size > t; s -= slide) want.set(`${k}|${s}`, (want.get(`${k}|${s}`) ?? 0) + 1);
    }
    const expected = [...want].map(([ks, n]) => {
      const [key, s] = ks.split("|");
      return { key, start: Number(s), end: Number(s) + size, count: n };
    });
    assert.deepEqual(sorted(feed(evs)), sorted(expected), `${size}/${slide}`);
  }
});

test("sessions merge and close at the watermark", () => {
  const evs = events(120, 200);
  weir.windowed(() => windows.session(25, windows.count(), { keyBy }));
  const expected = [];
  for (const k of [...new Set(evs.map(([k]) => k))]) {
    const ts = evs.filter(([kk]) => kk === k).map(([, t]) => t).sort((a, b) => a - b);
    let [start, last, n] = [ts[0], ts[0], 1];
    for (const t of ts.slice(1)) {
      if (t <= last + 25) [last, n] = [Math.max(last, t), n + 1];
      else {
        expected.push({ key: k, start, end: last + 25, count: n });
        [start, last, n] = [t, t, 1];
      }
    }
    expected.push({ key: k, start, end: last + 25, count: n });
  }
  assert.deepEqual(sorted(feed(evs)), sorted(expected));
});

test("update mode emits changed windows per batch and needs event time", () => {
  testing.resetState({ outputMode: "update" });
  weir.windowed(() => windows.tumbling(100, windows.count(), { keyBy }));
  const { outputs } = testing.run([1, 2, 150].map((t) => ({ value: '{"key":"a"}', timestamp: t })));
  assert.deepEqual(outputs.map((o) => JSON.parse(text(o.value))), [
    { key: "a", start: 0, end: 100, count: 2 },
    { key: "a", start: 100, end: 200, count: 1 },
  ]);
  assert.deepEqual([text(outputs[0].key), outputs[0].timestamp], ["a", 99]);
  reset();
  testing.resetState({ outputMode: "update", eventTime: false });
  weir.windowed(() => windows.tumbling(100, windows.count(), { keyBy }));
  assert.throws(() => testing.run([{ value: "{}", timestamp: 1 }]), /needs an \[event-time\] section/);
});

test("keys are escaped as the Rust SDK does", () => {
  assert.equal(windows.jsonString(new TextEncoder().encode('a"b\\c\u0001é')), '"a\\"b\\\\c\\u0001é"');
});

function keyBy(r) {
  return byKey(r);
}
