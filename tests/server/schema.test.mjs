// server/proto/schema.mjs (what the JSON gateway knows of the protos) is
// generated from server/proto/*.proto: it must be up to date.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { generate } from "../../server/proto/gen.mjs";

test("server/proto/schema.mjs matches the .proto files", () => {
  const current = readFileSync(new URL("../../server/proto/schema.mjs", import.meta.url), "utf8");
  assert.equal(current, generate(), "run: node server/proto/gen.mjs");
});
