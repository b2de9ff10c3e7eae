// The two ways a record can fail, as in every weir SDK, and the reason a
// refused record is given.

/** This record is bad: it is refused with this reason, and the pipeline's
 * `on-error` decides its fate. Any other exception a function throws for a
 * record is treated the same way, with its name, message and place in the
 * user's code as the reason. */
export class BadRecord extends Error {}

/** The transform cannot go on: the pipeline stops with this message. */
export class Broken extends Error {}

// One stack frame: SpiderMonkey's `fn@file:line:col` (in the component)
// or V8's `at fn (file:line:col)` / `at file:line:col` (under node --test).
const FRAME = [/^(.*?)@(.*):(\d+):(\d+)$/, /^\s*at (?:(.*?) \()?(.*?):(\d+):(\d+)\)?$/];

function frames(stack) {
  const out = [];
  for (const line of String(stack || "").split("\n")) {
    for (const re of FRAME) {
      const m = re.exec(line);
      if (m) {
        out.push({ fn: m[1] || "", file: m[2], line: m[3], col: m[4] });
        break;
      }
    }
  }
  return out;
}

// The project's directory as stack frames spell it: this file is its
// weir/errors.js.
const ROOT = (() => {
  const own = frames(new Error().stack).find((f) => f.file.endsWith("weir/errors.js"));
  return own ? own.file.slice(0, -"weir/errors.js".length) : "";
})();

function inUserCode(f) {
  if (!f.file.startsWith(ROOT) || f.file.startsWith(`${ROOT}weir/`)) return false;
  // In the component files are named relative to the project; an absolute
  // one is the componentizer's own glue.
  return ROOT !== "" || !f.file.startsWith("/");
}

/** `file:line:col in fn` of the innermost frame of `e`'s stack in the
 * user's own code (under the project, outside weir/), or undefined. */
function where(e) {
  const f = frames(e.stack).find(inUserCode);
  if (!f) return undefined;
  const at = `${f.file.slice(ROOT.length)}:${f.line}:${f.col}`;
  return f.fn ? `${at} in ${f.fn}` : at;
}

/** A refused record's reason: a BadRecord's own message; for any other
 * exception its name, message and where in the user's code it was thrown. */
export function reason(e) {
  if (e instanceof BadRecord) return e.message || "bad record";
  if (e instanceof Error) {
    const at = where(e);
    return at ? `${e.name}: ${e.message} at ${at}` : `${e.name}: ${e.message}`;
  }
  return String(e);
}
