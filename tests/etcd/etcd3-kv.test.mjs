// The etcd3 npm client (1.1.2) against a real etcd and edge-lease: watch
// with history (its shared stream, progress_notify on every create,
// created replies matched in order), a prefix watch with a filter, txn with
// if()/then()/else(), count, sorted and limited getAll, compaction errors
// as etcd3 classifies them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Etcd3 } from "etcd3";
import { startBoth } from "./harness.mjs";
import { until, within } from "./grpc-client.mjs";

const strip = (v) => JSON.parse(JSON.stringify(v, (k, x) => (["cluster_id", "member_id", "raft_term"].includes(k) ? undefined : x)));

test("etcd3 client: watch with history, txn with if(), count, compaction, on both", async (t) => {
  const { etcd, edge } = await startBoth(t);
  const results = [];
  for (const side of [etcd, edge]) {
    const client = new Etcd3({ hosts: side.url });
    t.after(() => client.close());
    const r = {};
    await client.put("cfg/a").value("1");
    await client.put("cfg/b").value("2");
    await client.put("cfg/a").value("3");
    await client.delete().key("cfg/b");

    // History from revision 2, with previous values.
    const events = [];
    const watcher = await within(client.watch().prefix("cfg/").startRevision("2").withPreviousKV().create(), 5000, "watch");
    watcher.on("put", (kv, prev) => events.push(["put", kv.key.toString(), kv.value.toString(), kv.mod_revision, prev?.value.toString() ?? null]));
    watcher.on("delete", (kv, prev) => events.push(["delete", kv.key.toString(), kv.mod_revision, prev?.value.toString() ?? null]));
    // A second watcher on the same stream: only deletes (etcd3 1.1.2 swaps
    // the names: ignore("delete") sends the NOPUT filter).
    const deletes = [];
    const onlyDeletes = await within(client.watch().key("cfg/a").ignore("delete").create(), 5000, "watch 2");
    onlyDeletes.on("delete", (kv) => deletes.push(kv.mod_revision));
    assert.ok(await until(() => events.length >= 4, 5000), `${side.name}: history`);
    await client.put("cfg/c").value("4");
    await client.delete().key("cfg/a");
    assert.ok(await until(() => events.length >= 6 && deletes.length >= 1, 5000), `${side.name}: live events`);
    r.events = events;
    r.deletes = deletes;
    await watcher.cancel();
    await onlyDeletes.cancel();

    // Txn: if()/then()/else().
    const yes = await client.if("cfg/c", "Value", "==", "4").then(client.put("cfg/c").value("5"), client.get("cfg/c")).else(client.put("cfg/x").value("no")).commit();
    const no = await client.if("cfg/c", "Version", ">", 10).then(client.put("cfg/x").value("yes")).else(client.get("cfg/c"), client.delete().key("cfg/c")).commit();
    const created = await client.if("lock", "Create", "==", 0).then(client.put("lock").value("me")).commit();
    const again = await client.if("lock", "Create", "==", 0).then(client.put("lock").value("you")).commit();
    r.txns = strip([yes, no, created, again]);
    r.count = await client.getAll().prefix("").count();
    r.sorted = await client.getAll().prefix("").sort("Create", "Descend").limit(2).keys();
    r.missingCount = await client.getAll().prefix("nothing/").count();

    // Compaction, then a read before it: etcd3's CompactedError? The message.
    await client.put("z").value("1");
    const rev = Number((await client.put("z").value("2").exec()).header.revision);
    await client.put("z").value("3");
    r.before = await client.get("z").revision(rev - 1).string();
    await client.kv.compact({ revision: rev });
    r.compacted = await client.get("z").revision(rev - 1).string().then((v) => v, (e) => [e.constructor.name, e.message]);
    r.future = await client.get("z").revision(rev + 100).string().then((v) => v, (e) => [e.constructor.name, e.message]);
    results.push(r);
  }
  assert.deepEqual(results[1], results[0]);
  assert.equal(results[1].events.length, 6);
});
