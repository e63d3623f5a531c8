// etcdctl 3.4's kv, range, history, txn, watch and compaction commands
// against a real etcd and edge-lease, outputs compared (exit code, stdout,
// stderr without clientv3's JSON warning lines; `-w json` with cluster and
// member ids and raft terms dropped).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, etcdctl, etcdctlWatch } from "./harness.mjs";

async function run(url, args, opts) {
  const r = await etcdctl(url, args, opts);
  const stderr = r.stderr.split("\n").filter((l) => l && !l.startsWith("{")).join("\n");
  let stdout = r.stdout;
  if (args.includes("json") && r.code === 0) {
    stdout = JSON.stringify(JSON.parse(stdout), (k, v) => (["cluster_id", "member_id", "raft_term"].includes(k) ? undefined : v));
  }
  return { code: r.code, stdout, stderr };
}


test("etcdctl: kv, ranges, get --rev, txn, watch --rev --prev-kv and compaction give etcd's output", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const urls = [etcd.url, edge.url];
  let n = 0;
  const both = async (args, opts) => {
    const [a, b] = await Promise.all(urls.map((u) => run(u, args, opts)));
    n++;
    assert.deepEqual(b, a, `etcdctl ${args.join(" ")}`);
    return a;
  };

  for (const [k, v] of [["a", "1"], ["b", "2"], ["c", "3"], ["b/x", "4"], ["d", "5"], ["a", "6"], ["c", "7"]]) await both(["put", k, v]);
  await both(["put", "--prev-kv", "b", "8"]);
  await both(["get", "a", "c"]);
  await both(["get", "--from-key", "b"]);
  await both(["get", "--from-key", ""]);
  await both(["get", "--prefix", "b"]);
  await both(["get", "--prefix", "", "--sort-by=MODIFY", "--order=DESCEND"]);
  await both(["get", "--prefix", "", "--sort-by=VERSION", "--order=ASCEND", "--limit=3"]);
  await both(["get", "--prefix", "", "--sort-by=CREATE", "--order=DESCEND", "--keys-only"]);
  await both(["get", "--prefix", "", "--sort-by=VALUE", "--order=DESCEND", "--print-value-only"]);
  await both(["get", "--prefix", "", "--limit=2"]);
  await both(["get", "--prefix", "", "--limit=2", "-w", "json"]);
  await both(["get", "--consistency=s", "a"]);
  for (const rev of ["1", "2", "4", "6", "7", "9", "100"]) await both(["get", "--prefix", "", `--rev=${rev}`]);
  await both(["get", "a", "--rev=6", "-w", "json"]);

  // txn from stdin: compares, then success ops, then failure ops, each list
  // ended by an empty line (without the last one etcdctl stops at EOF and
  // sends nothing). Each must run on etcd; one that fails says so.
  const script = (cmps, yes, no) => [...cmps, "", ...yes, "", ...no, ""].join("\n") + "\n";
  const txn = async (args, input, code = 0) => {
    const r = await both(args, { input });
    assert.equal(r.code, code, `etcdctl ${args.join(" ")}: ${r.stderr}`);
  };
  await txn(["txn"], script(['mod("a") > "0"', 'val("b") = "8"'], ["put a txn-yes", "get b --prefix", "del c --prev-kv"], ["put a txn-no"]));
  await txn(["txn"], script(['ver("a") = "100"'], ["put a yes"], ["get a", "put --prev-kv a txn-no", "get --prefix b --keys-only"]));
  await txn(["txn"], script(['c("zz") = "0"', 'value("a") != "x"'], ["put zz created"], []));
  // (etcd refuses a key put twice in one txn.)
  await txn(["txn"], script([], ["put t1 1", "put t1 2"], []), 1);
  await txn(["txn"], script([], ["put t1 1", "put t2 2"], []));
  await txn(["txn", "-w", "json"], script(['create("a") > "1"'], ["get a"], []));
  await txn(["txn", "-i"], script(['version("d") = "1"'], ["del --prefix b"], []));
  await both(["get", "--prefix", ""]);

  // Deletes of ranges.
  await both(["del", "a", "b/y"]);
  await both(["del", "--from-key", "t"]);
  await both(["del", "--prev-kv", "--prefix", "z"]);
  await both(["get", "--from-key", ""]);

  // watch --rev --prev-kv: history first, then live events.
  const watches = await Promise.all(urls.map((u) => etcdctlWatch(u, ["--rev=2", "--prev-kv", "--prefix", ""], 40)));
  assert.ok(watches[1].split("\n").length >= 30, watches[1]);
  assert.equal(watches[1], watches[0]);
  const live = urls.map((u) => etcdctlWatch(u, ["--prev-kv", "d"], 7));
  await new Promise((ok) => setTimeout(ok, 500));
  await both(["put", "d", "live"]);
  await both(["del", "d"]);
  const [wa, wb] = await Promise.all(live);
  assert.equal(wb, wa);
  assert.equal(wb, "PUT\nd\n5\nd\nlive\nDELETE\nd");

  // Compaction, then reads before it fail.
  await both(["compaction", "5"]);
  await both(["compaction", "--physical", "8"]);
  await both(["compaction", "8"]);
  await both(["compaction", "1000"]);
  await both(["get", "--prefix", "", "--rev=7"]);
  await both(["get", "--prefix", "", "--rev=8"]);
  const compacted = await Promise.all(urls.map((u) => etcdctlWatch(u, ["--rev=3", "a"], 3, { timeout: 3000 })));
  assert.equal(compacted[1], compacted[0]);
  // The hash of the history both hold after all that (etcd's HashKV): the
  // same number, the compaction point and revision; the endpoint differs.
  const hashes = await Promise.all(urls.map((u) => run(u, ["endpoint", "hashkv", "-w", "json"])));
  const [ha, hb] = hashes.map((r) => JSON.parse(r.stdout).map((e) => ({ ...e, Endpoint: undefined })));
  assert.deepEqual(hb, ha);
  assert.ok(ha[0].HashKV.hash > 0 && Number(ha[0].HashKV.compact_revision) === 8, JSON.stringify(ha));
  t.diagnostic(`${n} etcdctl commands compared`);
});
