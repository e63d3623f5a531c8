// The client scenario every runtime runs against edge-lease's Node server
// (tests/client/runtimes.test.mjs). Self-contained: it is stringified into
// each runtime's script, so it only uses what it is given.
export async function scenario({ connect, LeaseError }, url) {
  const etcd = connect(url, { timeout: 5000 });
  const out = {};
  const p = await etcd.put("rt/a", "alpha ✓", { prevKv: true });
  out.created = p.created;
  out.get = (await etcd.get("rt/a")).value;
  await etcd.put("rt/b", Uint8Array.from([0, 255]));
  out.bytes = Array.from((await etcd.get("rt/b", { bytes: true })).value);
  out.range = (await etcd.range({ key: "rt/", prefix: true })).kvs.map((e) => e.key);
  const g = await etcd.grant(5);
  out.keepAlive = await etcd.keepAliveOnce(g.id);
  await etcd.put("rt/leased", "x", { lease: g.id });
  out.keys = (await etcd.timeToLive(g.id, { keys: true })).keys;
  await etcd.revoke(g.id);
  out.gone = (await etcd.get("rt/leased")) === undefined;
  try {
    await etcd.keepAliveOnce(g.id);
  } catch (e) {
    out.error = [e instanceof LeaseError, e.code];
  }
  const s = await etcd.session({ ttl: 2 });
  await new Promise((r) => setTimeout(r, 1500)); // at least one keepalive (every TTL/3)
  out.sessionAlive = (await etcd.timeToLive(s.lease)).ttl > 0 && !s.signal.aborted;
  await s.close();
  out.sessionClosed = [(await etcd.timeToLive(s.lease)).ttl, s.signal.reason.code];
  out.deleted = (await etcd.delete("rt/a")).deleted;
  await etcd.delete("rt/b");
  await etcd.close();
  return out;
}

export const expected = {
  created: true,
  get: "alpha ✓",
  bytes: [0, 255],
  range: ["rt/a", "rt/b"],
  keepAlive: 5,
  keys: ["rt/leased"],
  gone: true,
  error: [true, "LeaseNotFound"],
  sessionAlive: true,
  sessionClosed: [-1, "Closed"],
  deleted: true,
};
