// The option defaults are defined once, by the core (Config::default(),
// exposed by the binding as defaults()): the wrapper applies them, and the
// docs/engine.md's options table and js/index.d.ts state the same numbers.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { Lessor } from "edge-lease";
import "../../js/entries/node.mjs"; // initializes the source modules (edge-lease itself is the bundle)
import { defaults } from "../../js/binding.js";
import * as engine from "../../js/pkg/edge_lease.js"; // the build js/entries/node.mjs initialized

const read = (path) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
const core = defaults(engine);

test("the core's defaults name the numeric Lessor options", () => {
  assert.deepEqual(Object.keys(core).sort(), [
    "history",
    "maxKeyBytes",
    "maxKeysPerLease",
    "maxTxnOps",
    "maxValueBytes",
    "minTtl",
    "quotaBytes",
    "revokeRate",
  ]);
  for (const v of Object.values(core)) assert.ok(Number.isInteger(v) && v > 0, String(v));
});

test("docs/engine.md's options table states the core's defaults", () => {
  // Rows like "| `minTtl` | 1 | ... |".
  const stated = {};
  for (const [, name, value] of read("docs/engine.md").matchAll(/^\| `(\w+)` \| ([0-9][0-9,]*) \|/gm)) {
    if (name in core) stated[name] = Number(value.replaceAll(",", ""));
  }
  assert.deepEqual(stated, core);
});

test("js/index.d.ts states the core's defaults (@default on each LessorOptions field)", () => {
  const dts = read("js/index.d.ts");
  const body = dts.slice(dts.indexOf("export interface LessorOptions"));
  const stated = {};
  // A doc comment, then the field it documents.
  for (const [, doc, name] of body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(\w+)\?:/g)) {
    const d = /@default (\d+)/.exec(doc);
    if (d) stated[name] = Number(d[1]);
  }
  assert.deepEqual(stated, core);
});

test("a Lessor without options applies them", () => {
  const lessor = new Lessor({ autoTick: false, now: () => 1_700_000_000_000 });
  assert.equal(lessor.grant(0).ttl, core.minTtl);
  assert.throws(() => lessor.put("k".repeat(core.maxKeyBytes + 1), "v"), { code: "InvalidArgument" });
  lessor.put("k".repeat(core.maxKeyBytes), "v");
  assert.throws(() => lessor.put("v", new Uint8Array(core.maxValueBytes + 1)), { code: "InvalidArgument" });
  lessor.put("v", new Uint8Array(core.maxValueBytes));
  lessor.close();
});
