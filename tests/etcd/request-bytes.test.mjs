// --max-request-bytes, given the same to a real etcd 3.4 and to edge-lease:
// what a write may carry, gRPC's receive limit above it (512 KiB more), the
// JSON gateway's, and where watch fragments are cut, compared.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startBoth, post, b64 } from "./harness.mjs";
import { connect, norm, until } from "./grpc-client.mjs";

const MAX = 3 * 1024 * 1024;
const B = (s) => Buffer.from(s);
// A put's message with a value of `n` bytes is n + 12 bytes here (key "k",
// tags and lengths); etcd's raft entry adds 18 more.
const value = (n) => Buffer.alloc(n, 0x61);

test("--max-request-bytes: what a write may carry and the errors past it, on gRPC and on the gateway, as etcd's", async (t) => {
  const { etcd, edge } = await startBoth(t, { args: ["--max-request-bytes", String(MAX)] });
  const out = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    const r = {};
    // Past the default's 1.5 MiB, within the flag's 3 MiB.
    r.grpcFits = norm(await c.kv("Put", { key: B("k"), value: value(2.5 * 1024 * 1024) }));
    // Past the flag, within gRPC's receive limit: the request check.
    r.grpcTooLarge = await c.kv("Put", { key: B("k"), value: value(MAX + 1024) });
    r.txnTooLarge = await c.kv("Txn", { success: [{ request_put: { key: B("t"), value: value(MAX) } }] });
    // Past gRPC's receive limit (3.5 MiB).
    r.grpcOverLimit = await c.kv("Put", { key: B("k"), value: value(MAX + 600 * 1024) });
    const gw = async (n) => {
      const res = await post(side.url, "/v3/kv/put", { key: b64("g"), value: value(n).toString("base64") });
      return [res.status, res.body.code, res.body.message ?? res.body.error, res.body.header ? "header" : null];
    };
    r.gatewayFits = await gw(2.5 * 1024 * 1024);
    r.gatewayTooLarge = await gw(MAX + 1024);
    r.gatewayOverLimit = await gw(MAX + 600 * 1024);
    // Nothing refused was written.
    const got = await c.kv("Range", { key: B("k") });
    r.stored = [got.kvs.length, Buffer.from(got.kvs[0].value, "base64").length, got.kvs[0].version];
    r.txnKey = (await c.kv("Range", { key: B("t") })).kvs?.length ?? 0;
    out.push(r);
  }
  assert.deepEqual(out[1], out[0]);
  assert.deepEqual(out[0].grpcTooLarge, { code: 3, details: "etcdserver: request is too large" });
  assert.equal(out[0].grpcOverLimit.code, 8);
  assert.equal(out[0].gatewayFits[0], 200);
});

test("--max-request-bytes: watch fragments are cut at the flag plus 512 KiB, as etcd's", async (t) => {
  const { etcd, edge } = await startBoth(t, { args: ["--max-request-bytes", String(MAX)] });
  const out = [];
  for (const side of [etcd, edge]) {
    const c = connect(t, side.url);
    const w = c.watch();
    w.write({ create_request: { key: B("f/"), range_end: B("f0"), prev_kv: true, fragment: true } });
    assert.ok(await until(() => w.messages.some((m) => m.created), 10_000), `${side.name}: created`);
    // Three values of 1.2 MiB deleted in one revision: 3.6 MB of previous
    // values, two events to a fragment at 3.5 MiB (one at the default's 2 MiB).
    for (let i = 0; i < 3; i++) assert.ok((await c.kv("Put", { key: B(`f/${i}`), value: value(1.2 * 1024 * 1024) })).header, side.name);
    assert.equal(String((await c.kv("DeleteRange", { key: B("f/"), range_end: B("f0") })).deleted), "3", side.name);
    const deletes = () => w.messages.flatMap((m) => m.events ?? []).filter((e) => e.type === "DELETE").length;
    assert.ok(await until(() => deletes() === 3, 20_000), `${side.name}: ${deletes()} of 3 delete events`);
    out.push(w.messages.filter((m) => m.events?.[0]?.type === "DELETE").map((m) => [m.events.length, Boolean(m.fragment)]));
  }
  assert.deepEqual(out[1], out[0]);
  assert.deepEqual(out[0], [[2, true], [1, false]]);
});

test("--max-request-bytes: v3lock's and v3election's writes past it are refused as etcd's (Unknown, its message), within it served", async (t) => {
  const { etcd, edge } = await startBoth(t, { args: ["--max-request-bytes", "4096"] });
  const out = [];
  for (const side of [etcd, edge]) {
    const lease = (await post(side.url, "/v3/lease/grant", { TTL: 30 })).body.ID;
    const answer = async (path, body) => {
      const r = await post(side.url, path, body);
      return [r.status, r.body.code ?? 0, r.body.message ?? r.body.error ?? (r.body.header ? "ok" : "")];
    };
    const big = b64("x".repeat(8192));
    out.push({
      campaign: await answer("/v3/election/campaign", { name: b64("e"), lease, value: big }),
      lock: await answer("/v3/lock/lock", { name: big, lease }),
      smallCampaign: await answer("/v3/election/campaign", { name: b64("e2"), lease, value: b64("v") }),
    });
  }
  assert.deepEqual(out[1], out[0]);
  assert.deepEqual(out[0].campaign, [500, 2, "etcdserver: request is too large"]);
  assert.equal(out[0].smallCampaign[2], "ok");
});
