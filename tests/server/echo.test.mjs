// Issue 13, item 7: bad input was echoed back whole in error messages (a
// 1.9 MB answer to a 1.9 MB number). Errors name it, shortened; short
// input still reads exactly as etcd's (Go's) messages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startEdge, post } from "../etcd/harness.mjs";

test("errors do not echo huge bad input; short input reads as etcd's message", async (t) => {
  const edge = await startEdge(t);
  const huge = await post(edge.url, "/v3/kv/range", `{"key":"YQ==","limit":"${"9".repeat(1_000_000)}"}`);
  assert.equal(huge.status, 400);
  assert.equal(huge.body.code, 3);
  assert.ok(JSON.stringify(huge.body).length < 1000, `${JSON.stringify(huge.body).length} bytes`);
  assert.match(huge.body.message, /^json: cannot unmarshal number 9{64}\.\.\. into Go value of type int64$/);
  const enumName = await post(edge.url, "/v3/kv/range", `{"key":"YQ==","sort_order":"${"X".repeat(100_000)}"}`);
  assert.equal(enumName.status, 400);
  assert.ok(JSON.stringify(enumName.body).length < 1000);
  // Deeply nested values in a scalar field: a 400, not a 500 stack overflow.
  const nested = await post(edge.url, "/v3/kv/put", `{"key":"YQ==","lease":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
  assert.deepEqual([nested.status, nested.body.code], [400, 3]);
  const small = await post(edge.url, "/v3/kv/range", `{"key":"YQ==","limit":"99999999999999999999"}`);
  assert.equal(small.body.message, "json: cannot unmarshal number 99999999999999999999 into Go value of type int64");
});
