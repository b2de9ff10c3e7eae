// Keyed state and timers natively: the window-count example.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { copyFileSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { reset } from "../weir/register.js";
import * as testing from "../weir/testing.js";

const text = (b) => new TextDecoder().decode(b);

// The example as a project: its app.js beside this SDK's weir/.
const here = dirname(fileURLToPath(import.meta.url));
const project = mkdtempSync(join(tmpdir(), "weir-js-window-"));
symlinkSync(join(here, "../weir"), join(project, "weir"));
copyFileSync(join(here, "../../../examples/js/window-count/app.js"), join(project, "app.js"));

beforeEach(async () => {
  reset();
  testing.resetState();
  // A fresh registration: import the example under a new query string.
  await import(`${pathToFileURL(join(project, "app.js"))}?${Math.random()}`);
});

test("windows fire once when the watermark passes their end", () => {
  const recs = [["a", 1], ["b", 2], ["a", 5], ["a", 11]].map(([k, t]) => ({ value: JSON.stringify({ key: k, ts: t }), timestamp: t }));
  const { outputs, rejected } = testing.run(recs, [["size", "10ms"]]);
  assert.deepEqual([outputs, rejected], [[], []]);
  let fired = testing.fireTimers({ watermark: 10 }).outputs;
  assert.deepEqual(fired.map((o) => text(o.value)).sort(), ['{"key":"a","start":0,"end":10,"count":2}', '{"key":"b","start":0,"end":10,"count":1}']);
  assert.deepEqual(fired.map((o) => text(o.key)), ["a", "b"]);
  assert.deepEqual(testing.fireTimers({ watermark: 15 }).outputs, []);
  fired = testing.fireTimers({ watermark: 20 }).outputs;
  assert.deepEqual(fired.map((o) => text(o.value)), ['{"key":"a","start":10,"end":20,"count":1}']);
});

test("a bad duration is named", () => {
  assert.throws(() => testing.run([], [["size", "ten"]]), /not a duration/);
});
