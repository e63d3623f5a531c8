// edge-lease/fenced: the highest token accepted, kept in a Map or a Lessor
// (in memory, or through the file store across a restart); lower tokens
// refused with StaleToken under concurrent writers, one write at a time per
// fence, and no lost update. (A Durable Object's storage: tests/workerd/fence.test.mjs.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor, LeaseError } from "edge-lease";
import { fenced } from "edge-lease/fenced";
import { FileStore } from "edge-lease/stores/file";

const tick = () => new Promise((r) => setImmediate(r));

/**
 * Writers with the tokens `tokens`, all started at once, each doing a
 * read-modify-write of `resource` with turns of the event loop in between
 * (as a real resource's I/O would). Returns the outcome of each.
 */
async function contend(fence, resource, tokens) {
  let active = 0;
  const outcomes = await Promise.allSettled(
    tokens.map((token) =>
      fence.write(token, async () => {
        active++;
        assert.equal(active, 1, "one write at a time on a fence");
        const seen = resource.log.length;
        await tick();
        resource.log = [...resource.log.slice(0, seen), token];
        await tick();
        active--;
        return token;
      }),
    ),
  );
  return outcomes.map((o, i) => ({ token: tokens[i], ok: o.status === "fulfilled", error: o.reason }));
}

/** Checks the writes' log against the outcomes: in token order, none lost, none stale. */
function checkLog(resource, outcomes) {
  const accepted = outcomes.filter((o) => o.ok).map((o) => o.token);
  assert.equal(resource.log.length, accepted.length, "no lost update: every accepted write is in the log");
  for (let i = 1; i < resource.log.length; i++) assert.ok(resource.log[i] >= resource.log[i - 1], `write ${resource.log[i]} came after ${resource.log[i - 1]}`);
  for (const o of outcomes.filter((o) => !o.ok)) {
    assert.ok(o.error instanceof LeaseError, o.error?.stack);
    assert.equal(o.error.code, "StaleToken");
    assert.equal(o.error.token, o.token);
    assert.ok(o.error.highest > o.token);
    assert.ok(resource.log.includes(o.error.highest), "refused because of a token that was accepted");
  }
}

// A deterministic shuffle of 1..n (each token twice: a holder writes more than once).
function tokens(n, seed = 7) {
  const out = [];
  for (let i = 1; i <= n; i++) out.push(i, i);
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

for (const [name, make] of [
  ["a Map", () => new Map()],
  ["a Lessor", () => new Lessor({ autoTick: false })],
]) {
  test(`fenced(${name}): concurrent writers, lower tokens refused, no lost or stale write`, async () => {
    const store = make();
    const fence = fenced(store, "fences/job");
    const resource = { log: [] };
    const outcomes = await contend(fence, resource, tokens(40));
    checkLog(resource, outcomes);
    assert.ok(outcomes.some((o) => !o.ok) && outcomes.some((o) => o.ok));
    assert.equal(await fence.highest(), 40);
    // Equal tokens pass (the same holder writing again); lower ones never run fn.
    assert.equal(await fence.write(40, () => "again"), "again");
    let ran = false;
    await assert.rejects(fence.write(39, () => (ran = true)), { code: "StaleToken", token: 39, highest: 40 });
    assert.equal(ran, false);
  });
}

test("fenced: two Fence objects on one store and name share the fence and its queue", async () => {
  const store = new Map();
  const a = fenced(store, "f");
  const b = fenced(store, "f");
  const resource = { log: [] };
  const outcomes = await Promise.all([contend(a, resource, [3, 1, 5]), contend(b, resource, [2, 4, 6])]);
  checkLog(resource, outcomes.flat());
  assert.equal(await fenced(store, "other").highest(), 0, "fences are per name");
});

test("fenced: the token is recorded before fn runs: a failing write still raises the fence", async () => {
  const fence = fenced(new Map(), "f");
  await assert.rejects(fence.write(9, () => { throw new Error("resource down"); }), /resource down/);
  assert.equal(await fence.highest(), 9);
  await assert.rejects(fence.write(8, () => {}), { code: "StaleToken" });
});

test("fenced(lessor with a file store): the highest token survives a restart", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-fence-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const groupCommit of [false, true]) {
    const path = join(dir, String(groupCommit));
    const open = () => {
      const store = FileStore.open(path, { groupCommit });
      return { store, lessor: new Lessor({ storage: store, restore: store.entries(), autoTick: false }) };
    };
    let { store, lessor } = open();
    const resource = { log: [] };
    checkLog(resource, await contend(fenced(lessor, "fences/job"), resource, tokens(10)));
    assert.equal((await fenced(lessor, "fences/job").write(12, () => "ok")), "ok");
    lessor.close();
    await store.close();

    ({ store, lessor } = open());
    const fence = fenced(lessor, "fences/job");
    assert.equal(await fence.highest(), 12, `groupCommit ${groupCommit}: the token came back from disk`);
    assert.equal(lessor.get("fences/job").value, "12", "kept as the key `name`, readable as any key");
    await assert.rejects(fence.write(11, () => {}), { code: "StaleToken", highest: 12 });
    assert.equal(await fence.write(13, () => "ok"), "ok");
    lessor.close();
    await store.close();
  }
});

test("fenced: bad input is refused with a typed error and changes nothing", async () => {
  assert.throws(() => fenced("not a store", "f"), { code: "InvalidArgument" });
  assert.throws(() => fenced({ get() {} }, "f"), { code: "InvalidArgument" });
  assert.throws(() => fenced(new Map(), ""), { code: "InvalidArgument" });
  assert.throws(() => fenced(new Map(), 5), { code: "InvalidArgument" });
  const store = new Map();
  const fence = fenced(store, "f");
  for (const bad of [0, -1, 1.5, NaN, "3", 2 ** 53, undefined]) {
    await assert.rejects(fence.write(bad, () => assert.fail("ran")), { code: "InvalidArgument" }, String(bad));
  }
  await assert.rejects(fence.write(1, "not a function"), TypeError);
  assert.equal(store.size, 0, "nothing recorded");
  store.set("f", "garbage");
  await assert.rejects(fence.highest(), { code: "CorruptEntry" });
  await assert.rejects(fence.write(5, () => assert.fail("ran")), { code: "CorruptEntry" });
  assert.equal(store.get("f"), "garbage");
});
