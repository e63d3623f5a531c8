// What each package ships: the edge package (edge-lease: what every browser,
// Worker and Node process installs) carries no file and no dependency of
// the etcd server, and the lean engine; the etcd package (edge-lease-etcd)
// carries the server, the Worker service, the demo page and the etcd build
// of the engine, and depends on the edge package for the rest.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pack, repo } from "./packed.mjs";

const dest = mkdtempSync(join(tmpdir(), "edge-lease-contents-"));
process.on("exit", () => rmSync(dest, { recursive: true, force: true }));
const edge = pack(join(repo, "js"), dest);
const etcd = pack(repo, dest);
const paths = (p) => p.files.map((f) => f.path);

test("the edge package has no server file and no server dependency", () => {
  const files = paths(edge);
  assert.ok(files.includes("pkg/edge_lease_bg.wasm"), "the lean engine");
  assert.ok(files.includes("dist/node.mjs") && files.includes("client/index.mjs") && files.includes("stores/file.mjs"));
  const server = files.filter((f) => /(^|\/)(etcd|server|worker|www)\/|h2\.wasm$|protobufjs|yaml|engine\/edge_lease/.test(f));
  assert.deepEqual(server, []);
  const manifest = JSON.parse(readFileSync(join(repo, "js/package.json"), "utf8"));
  assert.deepEqual(manifest.dependencies ?? {}, {});
  assert.equal(manifest.bin, undefined);
});

test("the lean engine the edge loads is not the etcd server's build", () => {
  const lean = readFileSync(join(repo, "js/pkg/edge_lease.d.ts"), "utf8");
  const full = readFileSync(join(repo, "dist/engine/edge_lease.d.ts"), "utf8");
  assert.doesNotMatch(lean, /hash_kv|etcd_key_bucket/);
  assert.match(full, /hash_kv/);
  assert.match(full, /etcd_key_bucket_next/);
});

test("the etcd package has the server, the Worker service, the demo page and the etcd build, and no edge file", () => {
  const files = paths(etcd);
  for (const f of ["server/main.mjs", "etcd/gateway.mjs", "etcd/proto/schema.mjs", "worker/index.mjs", "www/index.html", "dist/h2.wasm", "dist/engine/edge_lease_bg.wasm"]) {
    assert.ok(files.includes(f), f);
  }
  assert.deepEqual(files.filter((f) => f.startsWith("js/") || f.startsWith("crates/") || f.startsWith("tests/")), []);
  const manifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
  assert.deepEqual(Object.keys(manifest.dependencies).sort(), ["bcryptjs", "edge-lease", "protobufjs", "ws", "yaml"]);
  assert.equal(manifest.dependencies["edge-lease"], JSON.parse(readFileSync(join(repo, "js/package.json"), "utf8")).version);
  assert.deepEqual(Object.keys(manifest.bin), ["edge-lease-etcd"]);
});
