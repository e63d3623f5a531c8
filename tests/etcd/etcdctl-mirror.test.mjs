// `etcdctl make-mirror` both ways between edge-lease and a real etcd 3.4:
// the way to move a store onto an etcd cluster (or back) without stopping
// it. It copies the keys under a prefix (a Range at a revision), then
// replays later changes from a Watch at the next one. Every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { startBoth, etcdctl } from "./harness.mjs";
import { until } from "./grpc-client.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `etcdctl make-mirror` from `from` to `to` until stopped. */
function mirror(t, from, to, args) {
  const child = spawn("etcdctl", [`--endpoints=${from}`, "make-mirror", ...args, to], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const exited = new Promise((ok) => child.on("exit", ok));
  const stop = async () => {
    child.kill("SIGKILL");
    await Promise.race([exited, sleep(5000)]);
  };
  t.after(stop);
  return { stop, log: () => log };
}

/** The keys and values under `prefix` on `url`, as `key=value` lines. */
async function kvs(url, prefix) {
  const r = await etcdctl(url, ["get", prefix, "--prefix"]);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split("\n").filter(Boolean);
  const out = [];
  for (let i = 0; i + 1 < lines.length; i += 2) out.push(`${lines[i]}=${lines[i + 1]}`);
  return out;
}

/** Waits (at most 10 s) until `fn` gives true; fails with what it gave last. */
async function within10s(fn, what) {
  let last;
  assert.ok(await until(async () => (last = await fn()) === true, 10_000, 100), `${what}: not within 10 s (last: ${JSON.stringify(last)})`);
}

for (const [name, dir] of [
  ["from edge-lease to etcd", (s) => [s.edge, s.etcd]],
  ["from etcd to edge-lease", (s) => [s.etcd, s.edge]],
]) {
  test(`etcdctl make-mirror ${name}: the keys under the prefix, then every later change`, async (t) => {
    const [from, to] = dir(await startBoth(t));
    for (const [k, v] of [["app/a", "1"], ["app/b", "2"], ["app/c", "3"], ["other", "x"]]) {
      assert.equal((await etcdctl(from.url, ["put", k, v])).code, 0);
    }
    const m = mirror(t, from.url, to.url, ["--prefix=app/", "--dest-prefix=copy/"]);
    const same = async () => {
      // (--dest-prefix takes the place of --prefix.)
      const want = (await kvs(from.url, "app/")).map((l) => l.replace(/^app\//, "copy/"));
      const got = await kvs(to.url, "copy/");
      return JSON.stringify(got) === JSON.stringify(want) || { want, got, log: m.log() };
    };
    await within10s(same, "the first copy");
    // Later changes: a put, an overwrite, a delete, a txn, a key outside.
    await etcdctl(from.url, ["put", "app/d", "4"]);
    await etcdctl(from.url, ["put", "app/a", "one"]);
    await etcdctl(from.url, ["del", "app/b"]);
    // (No compares; the empty failure list needs its own empty line.)
    assert.equal((await etcdctl(from.url, ["txn"], { input: "\nput app/e 5\ndel app/c\n\n\n" })).code, 0);
    await etcdctl(from.url, ["put", "other", "y"]);
    await within10s(same, "the changes");
    assert.deepEqual(await kvs(to.url, "copy/"), ["copy/a=one", "copy/d=4", "copy/e=5"]);
    assert.deepEqual(await kvs(to.url, "other"), []);
    await m.stop();
  });
}
