// Issue 12: a Lessor constructed at a Worker's module scope must not stop the
// Worker from starting (workerd forbids random values and timers at global
// scope). Ids still come from the OS's randomness (two runtimes differ), the
// expiry timer works across requests, and a call that really is made at
// global scope fails with a clear NoEntropy.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { workerOptions } from "./worker-options.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

async function withWorker(t) {
  const mf = new Miniflare(workerOptions(join(ROOT, "tests/workerd/module-scope-worker.mjs"), ROOT));
  t.after(() => mf.dispose());
  return mf;
}

const get = async (mf, path) => {
  const res = await mf.dispatchFetch("http://worker" + path);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text);
};

test("a Lessor made at module scope: the Worker starts and serves from the same lessor", { timeout: 60_000 }, async (t) => {
  const mf = await withWorker(t);
  const a = await get(mf, "/?ttl=1");
  const b = await get(mf, "/?ttl=30");
  assert.match(a.id, /^[0-9a-f]{16}$/);
  assert.notEqual(a.id, b.id);
  assert.equal(a.manualTtl, 2, "options given at module scope apply");
  assert.deepEqual(b.keys, [`k/${a.id}`, `k/${b.id}`].sort(), "one lessor across requests");
  // The lease of 1 s expires (its key goes with it), and later requests go on.
  await new Promise((r) => setTimeout(r, 1500));
  const c = await get(mf, "/?ttl=30");
  assert.deepEqual(c.keys, [`k/${b.id}`, `k/${c.id}`].sort());
});

test("ids come from the OS's randomness, not a fixed seed: two runtimes differ", { timeout: 60_000 }, async (t) => {
  const first = await get(await withWorker(t), "/");
  const second = await get(await withWorker(t), "/");
  assert.notEqual(first.id, second.id);
});

test("a call at global scope is a clear NoEntropy; close() before any call works", { timeout: 60_000 }, async (t) => {
  const mf = await withWorker(t);
  const g = await get(mf, "/global");
  assert.equal(g.code, "NoEntropy");
  assert.match(g.message, /global scope/);
  assert.equal(await get(mf, "/closed"), "Closed");
});
