// etcdctl 3.4's `lock` and `elect` as users run them, against a real etcd
// and against edge-lease: two `lock NAME -- cmd` processes run their commands
// one after the other (checked with the times the commands write), `lock
// NAME` prints the key and gives it up on SIGINT, `elect NAME PROPOSAL` with
// an `elect -l NAME` listener that sees the leader and the next candidate
// take over once the first is interrupted. etcdctl does these with
// LeaseGrant, LeaseKeepAlive, Txn, Range and Watch (etcd-wire.md §1), so the
// edge-lease side needs the KV Txn and Watch services.
//
// Both sides: edge-lease serves KV/Txn, Watch, Lock and Election.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startEtcd, startEdge, tempDir } from "./harness.mjs";

const SIDES = [["etcd", startEtcd], ["edge-lease", startEdge]];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A long-running etcdctl: its output so far, waits for lines, signals, a bounded exit. */
function etcdctl(t, url, args, env = {}) {
  const child = spawn("etcdctl", [`--endpoints=${url}`, ...args], {
    env: { ...process.env, ETCDCTL_API: "3", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters = [];
  child.stdout.on("data", (d) => {
    out += d;
    for (const w of [...waiters]) w();
  });
  child.stderr.on("data", (d) => (err += d));
  let done = false;
  const exited = new Promise((ok) =>
    child.on("close", (code, signal) => {
      done = true;
      for (const w of [...waiters]) w();
      ok({ code, signal });
    }),
  );
  t.after(async () => {
    child.kill("SIGKILL");
    await Promise.race([exited, sleep(3000)]);
  });
  return {
    get out() {
      return out;
    },
    get err() {
      return err;
    },
    /** Resolves once stdout has `n` lines (rejects after `ms`). */
    lines(n, ms = 10_000) {
      const have = () => out.split("\n").length - 1 >= n;
      if (have()) return Promise.resolve(out.split("\n").slice(0, n));
      return new Promise((ok, no) => {
        const timer = setTimeout(() => no(new Error(`etcdctl ${args.join(" ")}: no ${n} lines in ${ms} ms: ${JSON.stringify(out)} ${err}`)), ms);
        const w = () => {
          if (!have() && done) {
            clearTimeout(timer);
            waiters.splice(waiters.indexOf(w), 1);
            no(new Error(`etcdctl ${args.join(" ")} exited with ${JSON.stringify(out)} ${err}`));
          }
          if (!have()) return;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(w), 1);
          ok(out.split("\n").slice(0, n));
        };
        waiters.push(w);
      });
    },
    signal: (s) => child.kill(s),
    exit: (ms = 10_000) => Promise.race([exited, sleep(ms).then(() => ({ timeout: true, out, err }))]),
  };
}

for (const [name, start] of SIDES) {
  test(`etcdctl lock (${name}): two 'lock NAME -- cmd' run their commands one after the other`, async (t) => {
    const side = await start(t);
    const dir = tempDir(t);
    const log = join(dir, "times");
    writeFileSync(log, "");
    // Each command writes its start and end time (ns) and the lock's key.
    const cmd = (id) => ["lock", "job", "--", "sh", "-c", `echo "${id} start $(date +%s%N) $ETCD_LOCK_KEY" >> ${log}; sleep 0.4; echo "${id} end $(date +%s%N)" >> ${log}`];
    const a = etcdctl(t, side.url, cmd("a"));
    const b = etcdctl(t, side.url, cmd("b"));
    const [ra, rb] = await Promise.all([a.exit(15_000), b.exit(15_000)]);
    // (each etcdctl exits 0 once its command did)
    assert.deepEqual([ra, rb], [{ code: 0, signal: null }, { code: 0, signal: null }], `${a.err}\n${b.err}`);
    const lines = readFileSync(log, "utf8").trim().split("\n").map((l) => l.split(" "));
    assert.equal(lines.length, 4, lines.join("\n"));
    // start, end of one, then start, end of the other: never interleaved.
    const [first, second] = [lines[0][0], lines[2][0]];
    assert.notEqual(first, second);
    assert.deepEqual(lines.map((l) => `${l[0]} ${l[1]}`), [`${first} start`, `${first} end`, `${second} start`, `${second} end`]);
    assert.ok(BigInt(lines[1][2]) <= BigInt(lines[2][2]), "the second started after the first ended");
    for (const l of [lines[0], lines[2]]) assert.match(l[3], /^job\/[0-9a-f]+$/, "ETCD_LOCK_KEY");
    assert.notEqual(lines[0][3], lines[2][3]);
    // Both keys are gone (the command's exit deletes the key).
    const left = etcdctl(t, side.url, ["get", "--prefix", "job/"]);
    await left.exit();
    assert.equal(left.out, "");
  });

  test(`etcdctl lock (${name}): 'lock NAME' prints the key, a second waits until SIGINT frees it`, async (t) => {
    const side = await start(t);
    const first = etcdctl(t, side.url, ["lock", "mylock"]);
    const [key1] = await first.lines(1);
    assert.match(key1, /^mylock\/[0-9a-f]+$/);
    const second = etcdctl(t, side.url, ["lock", "mylock"]);
    await sleep(500);
    assert.equal(second.out, "", "the second waits");
    const held = etcdctl(t, side.url, ["get", "--prefix", "mylock/", "--keys-only"]);
    await held.exit();
    assert.equal(held.out.split("\n").filter(Boolean).length, 2, held.out);
    first.signal("SIGINT");
    assert.deepEqual(await first.exit(), { code: 0, signal: null });
    const [key2] = await second.lines(1);
    assert.match(key2, /^mylock\/[0-9a-f]+$/);
    assert.notEqual(key2, key1);
    second.signal("SIGINT");
    await second.exit();
    const left = etcdctl(t, side.url, ["get", "--prefix", "mylock/"]);
    await left.exit();
    assert.equal(left.out, "", "SIGINT deletes the key");
  });

  test(`etcdctl elect (${name}): a listener sees the leader, and the next candidate once the first is interrupted`, async (t) => {
    const side = await start(t);
    const listener = etcdctl(t, side.url, ["elect", "-l", "leader"]);
    const one = etcdctl(t, side.url, ["elect", "leader", "server-3"]);
    const [key1, value1] = await one.lines(2);
    assert.match(key1, /^leader\/[0-9a-f]+$/);
    assert.equal(value1, "server-3");
    assert.deepEqual(await listener.lines(2), [key1, "server-3"]);
    const two = etcdctl(t, side.url, ["elect", "leader", "server-7"]);
    await sleep(500);
    assert.equal(two.out, "", "the second candidate waits");
    one.signal("SIGINT");
    assert.equal((await one.exit()).code, 0);
    const [key2, value2] = await two.lines(2);
    assert.match(key2, /^leader\/[0-9a-f]+$/);
    assert.notEqual(key2, key1);
    assert.equal(value2, "server-7");
    assert.deepEqual((await listener.lines(4)).slice(2), [key2, "server-7"]);
    two.signal("SIGINT");
    listener.signal("SIGINT");
    await Promise.all([two.exit(), listener.exit()]);
  });
}
