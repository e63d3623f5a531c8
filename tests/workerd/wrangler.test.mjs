// The deploy example (examples/worker) against the packed package: `wrangler
// deploy --dry-run` bundles it, and the bundle runs in Miniflare with the
// example's Durable Object binding: namespaces, leases, the alarm.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";
import { packedProject, repo } from "../pkg/packed.mjs";
import { leaseWorkerOptions } from "./harness.mjs";
import { b64 } from "../etcd/harness.mjs";

const run = promisify(execFile);

test("examples/worker: wrangler deploy --dry-run bundles it; the bundle serves namespaces in Miniflare", { timeout: 180_000 }, async (t) => {
  const project = packedProject();
  const dir = mkdtempSync(join(project, "example-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(repo, "examples/worker"), dir, { recursive: true });
  const toml = readFileSync(join(dir, "wrangler.toml"), "utf8");
  assert.match(toml, /class_name = "LeaseNamespace"/);
  assert.match(toml, /new_sqlite_classes = \["LeaseNamespace"\]/);

  const out = join(dir, "out");
  // wrangler's launcher refuses Node < 22.12; its CLI bundles fine on 20.
  const major = Number(process.versions.node.split(".")[0]);
  const cli = join(repo, "node_modules/wrangler", major >= 22 ? "bin/wrangler.js" : "wrangler-dist/cli.js");
  await run(process.execPath, [cli, "deploy", "--dry-run", "--outdir", out], {
    cwd: dir,
    timeout: 120_000,
    killSignal: "SIGKILL",
    env: {
      ...process.env,
      CI: "true",
      WRANGLER_SEND_METRICS: "false",
      XDG_CONFIG_HOME: join(dir, ".config"),
      WRANGLER_LOG_PATH: join(dir, "logs"),
    },
  });
  const files = readdirSync(out);
  assert.ok(files.some((f) => f.endsWith(".wasm")), `the wasm stays a module: ${files}`);
  const main = files.find((f) => f.endsWith(".js"));

  const persist = mkdtempSync(join(dir, "state-"));
  const mf = new Miniflare({
    ...leaseWorkerOptions({ scriptPath: join(out, main), modulesRoot: out, persist }),
    bindings: { EDGE_LEASE_HISTORY: "Infinity", EDGE_LEASE_MIN_TTL: "2" },
  });
  t.after(() => mf.dispose());
  const origin = (await mf.ready).origin;
  const post = async (path, body) => {
    const r = await fetch(origin + path, { method: "POST", body: JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
  };
  const g = await post("/n/team-a/v3/lease/grant", { TTL: 1 });
  assert.equal(g.status, 200);
  assert.equal(g.body.TTL, "2", "etcd's minimum TTL");
  assert.equal((await post("/n/team-a/v3/kv/put", { key: b64("k"), value: b64("v"), lease: g.body.ID })).status, 200);
  assert.equal((await post("/v3/kv/range", { key: b64("k") })).body.kvs, undefined, "default is another namespace");
  assert.equal((await post("/n/team-a/v3/kv/range", { key: b64("k") })).body.kvs.length, 1);
  // The alarm expires the lease with no traffic: the expiry's revision.
  await new Promise((r) => setTimeout(r, 3500));
  const after = await post("/n/team-a/v3/kv/range", { key: b64("k") });
  assert.equal(after.body.kvs, undefined);
  assert.equal(after.body.header.revision, "3");
});
