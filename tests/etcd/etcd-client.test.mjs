// The etcd-client crate (crates.io; Rust, tonic over hyper's HTTP/2), the
// most used Rust etcd client, unchanged: one scenario (tests/etcd-client:
// status and members, kv with sorting, limits, revisions and prev kvs, txn
// and its errors, leases with keepalive, time to live and revoke, v3lock
// with a waiting second holder, v3election with observe, watch from
// history, live, canceled and compacted) run against a real etcd 3.4 and
// against edge-lease, every line compared.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { startBoth, root } from "./harness.mjs";

const bin = join(root, "target/release/etcd-client-check");

function run(url) {
  return new Promise((ok, fail) =>
    execFile(bin, [url], { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? fail(new Error(`${url}: ${err.message}\n${stderr}`)) : ok(stdout.trim().split("\n").map((line) => line.split("\t"))),
    ),
  );
}

test("etcd-client (Rust): the same scenario gives the same lines on etcd 3.4 and on edge-lease", async (t) => {
  // Its own workspace (protoc at build time); the shared target dir keeps
  // it built between runs.
  execFileSync("cargo", ["build", "--release", "--quiet", "--manifest-path", join(root, "tests/etcd-client/Cargo.toml")], {
    cwd: root,
    env: { ...process.env, CARGO_TARGET_DIR: join(root, "target") },
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 15 * 60_000,
  });
  const { etcd, edge } = await startBoth(t);
  const want = await run(etcd.url);
  const got = await run(edge.url);
  for (let i = 0; i < Math.max(want.length, got.length); i++) assert.deepEqual(got[i], want[i], `line ${i}: ${want[i]?.[0]}`);
  // What the scenario says it checks happened on etcd.
  const line = Object.fromEntries(want);
  assert.equal(want.length, 41);
  assert.equal(line["second waits"], "true");
  assert.equal(line["second locks after unlock"], "job/<L2>");
  assert.match(line["watch from a compacted revision"], /canceled true compact \d+/);
  assert.equal(line["keepalive of the revoked lease"], "ttl 0");
});
