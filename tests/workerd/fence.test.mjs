// edge-lease/fenced in a Durable Object (Miniflare, SQLite-backed): the
// fence kept in the object's storage, or in a DurableLessor there; writes
// with shuffled tokens arrive at once, and none is lost or stale; the
// highest token survives a restart of the runtime.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { ROOT } from "./harness.mjs";
import { workerOptions } from "./worker-options.mjs";

const start = (persist) =>
  new Miniflare({
    ...workerOptions(join(ROOT, "tests/workerd/fence-worker.mjs"), ROOT),
    durableObjects: { RESOURCE: { className: "Resource", useSQLite: true } },
    durableObjectsPersist: persist,
  });

// 1..n, each twice (a holder writes more than once), in a fixed shuffled order.
function tokens(n) {
  const out = [];
  for (let i = 1; i <= n; i++) out.push(i, i);
  let s = 11;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

for (const kind of ["storage", "lessor"]) {
  test(`fenced(${kind === "storage" ? "ctx.storage" : "a DurableLessor"}) in a Durable Object: concurrent writers, then a restart`, { timeout: 60_000 }, async (t) => {
    const persist = mkdtempSync(join(tmpdir(), "edge-lease-fence-do-"));
    let mf = start(persist);
    t.after(async () => {
      await mf.dispose();
      rmSync(persist, { recursive: true, force: true });
    });
    const call = async (body) => (await mf.dispatchFetch("http://do/", { method: "POST", body: JSON.stringify({ kind, ...body }) })).json();

    const sent = tokens(15);
    const outcomes = await Promise.all(sent.map((token) => call({ op: "write", token })));
    const accepted = sent.filter((_, i) => outcomes[i].ok);
    const { highest, log } = await call({ op: "state" });
    assert.equal(highest, 15);
    assert.deepEqual([...log].sort((a, b) => a - b), [...accepted].sort((a, b) => a - b), "no lost update");
    for (let i = 1; i < log.length; i++) assert.ok(log[i] >= log[i - 1], `log in token order: ${log}`);
    outcomes.forEach((o, i) => {
      if (o.ok) return;
      assert.equal(o.code, "StaleToken");
      assert.equal(o.token, sent[i]);
      assert.ok(o.highest > sent[i] && log.includes(o.highest));
    });
    assert.ok(accepted.length < sent.length, "some writes arrived late and were refused");

    await mf.dispose();
    mf = start(persist);
    assert.deepEqual(await call({ op: "state" }), { highest: 15, log }, "the fence and the resource survive the restart");
    assert.deepEqual(await call({ op: "write", token: 14 }), { ok: false, code: "StaleToken", token: 14, highest: 15 });
    assert.deepEqual(await call({ op: "write", token: 16 }), { ok: true });
    assert.deepEqual((await call({ op: "state" })).log, [...log, 16]);
  });
}
