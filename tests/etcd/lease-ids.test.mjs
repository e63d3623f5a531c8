// The lease ids a server picks, on etcd and on edge-lease: they grow in
// grant order (etcd's come from its request id generator: the member id's
// low 16 bits, the start time, a count), also across a restart, so keys
// named after them (etcdctl lock's, elect's) list in the order they were
// taken. An id a client chose itself is skipped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { restart, startBoth } from "./harness.mjs";
import { connect } from "./grpc-client.mjs";

test("lease ids the server picks grow in grant order, under the member id's low 16 bits, across a restart; a client's own id is skipped", async (t) => {
  const sides = await startBoth(t);
  for (const [name, side] of Object.entries(sides)) {
    let c = connect(t, side.url);
    const member = BigInt((await c.maintenance("Status", {})).header.member_id);
    const grant = async (req = {}) => {
      const r = await c.lease("LeaseGrant", { TTL: 600, ...req });
      assert.equal(r.code, undefined, `${name}: ${JSON.stringify(r)}`);
      return BigInt(r.ID);
    };
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await grant());
    // (An id is positive: the top bit of the member's 16 is cleared.)
    for (const id of ids) assert.equal(id >> 48n, member & 0x7fffn, `${name}: ${id.toString(16)} under member ${member.toString(16)}`);
    const mine = await grant({ ID: String(ids.at(-1) + 1n) });
    ids.push(mine, await grant());
    if (side.cmd) {
      const again = await restart(t, side);
      c = connect(t, again.url);
      ids.push(await grant());
    }
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `${name}: ${ids.map((x) => x.toString(16)).join(" ")}`);
  }
});
