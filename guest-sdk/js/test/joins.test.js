// Joins natively, against the join's definition over shuffled input.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import * as weir from "../weir/index.js";
import * as joins from "../weir/joins.js";
import { reset } from "../weir/register.js";
import { native } from "../weir/state.js";
import * as testing from "../weir/testing.js";

const text = (b) => new TextDecoder().decode(b);

beforeEach(() => {
  reset();
  testing.resetState();
});

function register(kind) {
  const side = (r) => (r === undefined ? "-" : text(r.value));
  weir.joined(() => new joins.Join(kind, "orders", "payments", { beforeMs: 2, afterMs: 5, output: (j) => `${side(j.left)}|${side(j.right)}` }));
}

// Every pair with key equal and right time in [left - 2, left + 5], then
// (outer) the rows that matched nothing.
function reference(kind, rows) {
  const left = rows.filter((r) => r[0] === "L");
  const right = rows.filter((r) => r[0] === "R");
  const hit = (a, b) => a[1] === b[1] && a[2] - 2 <= b[2] && b[2] <= a[2] + 5;
  const out = [];
  for (const a of left) for (const b of right) if (hit(a, b)) out.push(`${a[3]}|${b[3]}`);
  if (kind === joins.LEFT_OUTER || kind === joins.FULL_OUTER) for (const a of left) if (!right.some((b) => hit(a, b))) out.push(`${a[3]}|-`);
  if (kind === joins.RIGHT_OUTER || kind === joins.FULL_OUTER) for (const b of right) if (!left.some((a) => hit(a, b))) out.push(`-|${b[3]}`);
  return out.sort();
}

// Random batches, each from one source, with the host's watermark (the
// smallest of each source's largest time, minus a delay) and late drops.
function simulate(kind, seed) {
  reset();
  testing.resetState();
  register(kind);
  // mulberry32: the low bits of a plain LCG alternate.
  let x = seed;
  const next = (n) => {
    x = (x + 0x6d2b79f5) | 0;
    let t = Math.imul(x ^ (x >>> 15), 1 | x);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  let wm;
  const top = {};
  const clock = { L: 0, R: 0 };
  const kept = [];
  const got = [];
  let n = 0;
  while (n < 300) {
    const side = next(2) === 0 ? "L" : "R";
    const batch = [];
    for (let i = 1 + next(11); i > 0; i--) {
      clock[side] += next(3);
      batch.push([side, `k${next(6)}`, clock[side] - next(8), `${side}${n++}`]);
    }
    const onTime = batch.filter((b) => wm === undefined || b[2] >= wm);
    native.watermark = wm;
    const recs = onTime.map(([, k, t, v]) => ({ value: v, key: k, timestamp: t }));
    const { outputs, rejected } = testing.run(recs, [], { source: side === "L" ? "orders" : "payments", firstOffset: n * 100 });
    assert.deepEqual(rejected, []);
    got.push(...outputs.map((o) => text(o.value)));
    kept.push(...onTime);
    if (wm !== undefined) got.push(...testing.fireTimers({ watermark: wm }).outputs.map((o) => text(o.value)));
    top[side] = Math.max(top[side] ?? -1e9, ...batch.map((b) => b[2]));
    const candidate = Math.min(...Object.values(top)) - 6;
    wm = wm === undefined ? candidate : Math.max(wm, candidate);
  }
  got.push(...testing.fireTimers({ watermark: 1e12 }).outputs.map((o) => text(o.value)));
  assert.equal(native.state.size, 0, "every row left state");
  return [got.sort(), reference(kind, kept)];
}

test("every join type equals its definition", () => {
  for (const kind of [joins.INNER, joins.LEFT_OUTER, joins.RIGHT_OUTER, joins.FULL_OUTER]) {
    for (const seed of [1, 7, 42]) {
      const [got, want] = simulate(kind, seed);
      assert.ok(want.some((w) => !w.includes("-")));
      assert.deepEqual(got, want, `${kind}, seed ${seed}`);
    }
  }
});

test("rows are kept only as long as the range allows", () => {
  register(joins.LEFT_OUTER);
  testing.run([{ value: "o", key: "k", timestamp: 100 }], [], { source: "orders" });
  assert.deepEqual(testing.fireTimers({ watermark: 105 }).outputs, []);
  const { outputs } = testing.fireTimers({ watermark: 106 });
  assert.deepEqual(outputs.map((o) => [text(o.value), text(o.key), o.timestamp]), [["o|-", "k", 100]]);
  assert.equal(native.state.size, 0);
});

test("misuse is explained", () => {
  register(joins.INNER);
  assert.throws(() => testing.run([{ value: "x", key: "k" }], [], { source: "refunds" }), /source `refunds`, which this join does not read/);
  const { rejected } = testing.run([{ value: "x" }], [], { source: "orders" });
  assert.deepEqual(rejected, [{ index: 0, reason: "record has no key to join on" }]);
  testing.resetState({ outputMode: "update" });
  assert.throws(() => testing.run([{ value: "x", key: "k" }], [], { source: "orders" }), /output-mode = "append"/);
  assert.throws(() => joins.inner("a", "a", { beforeMs: 0, afterMs: 0 }), /both sides are "a"/);
  assert.equal(joins.jsonKey("id")({ value: new TextEncoder().encode('{"id":7}') }), "7");
});
