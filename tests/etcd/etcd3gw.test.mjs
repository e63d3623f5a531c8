// etcd3gw (PyPI), a Python client of etcd's JSON gateway, unchanged: one
// scenario (tests/etcd/etcd3gw_scenario.py: kv, create and replace, sorted
// prefix reads, txn and its errors, leases with keys, refresh and revoke,
// its lock recipe, watch_once, watches from history and live) run against a
// real etcd 3.4 and against edge-lease, every step's result compared.
// scripts/setup.sh installs the client in .cache/etcd3gw.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { startBoth, root } from "./harness.mjs";

const python = join(root, ".cache/etcd3gw/bin/python");
const scenario = join(root, "tests/etcd/etcd3gw_scenario.py");

function run(url) {
  return new Promise((ok, fail) =>
    execFile(python, [scenario, url], { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${url}: ${err.message}\n${stderr}`)) : ok(stdout.trim().split("\n").map((line) => JSON.parse(line))),
    ),
  );
}

test("etcd3gw: the same scenario gives the same results on etcd 3.4 and on edge-lease", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const want = await run(etcd.url);
  const got = await run(edge.url);
  for (let i = 0; i < Math.max(want.length, got.length); i++) assert.deepEqual(got[i], want[i], `step ${i}: ${want[i]?.[0]}`);
  // The scenario did what it says on etcd (not errors on both sides).
  const step = Object.fromEntries(want);
  assert.equal(want.length, 41);
  assert.deepEqual([step["lock acquire"], step["second lock acquire"], step["second lock acquire after release"]], [true, false, true]);
  assert.equal(step["watch w from history"].length, 3);
  assert.equal(step["watch_prefix p/ live"].length, 5);
  assert.equal(step["revoked lease ttl"], -1);
});
