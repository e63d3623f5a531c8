// The server as users get it: the packed edge-lease-etcd package's bin, run
// with npx where its tarball (and the edge package's) is installed, with the
// dependencies npm installs for it (no dev dependencies: gRPC's HTTP/2 module
// must be in the package, grpc-js must not be needed), serving the JSON
// gateway and gRPC on one port, and the demo page with the edge package's
// browser files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect as http2Connect } from "node:http2";
import { join } from "node:path";
import { packedProject } from "./packed.mjs";
import { freePort, tempDir, b64 } from "../etcd/harness.mjs";
import { within } from "../etcd/grpc-client.mjs";
import { loadRoot } from "../../etcd/proto/load.mjs";

test("npx edge-lease-etcd, from the packed tarballs, serves the gateway, gRPC and the demo page", async (t) => {
  const project = packedProject();
  assert.ok(!existsSync(join(project, "node_modules", "@grpc", "grpc-js")), "grpc-js is a dev dependency only");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn("npx", ["--no-install", "edge-lease-etcd", "--listen-client-urls", url, "--advertise-client-urls", url, "--data-dir", join(tempDir(t), "data")], {
    cwd: project,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  // npx runs the server as its child: end the whole group.
  t.after(() => process.kill(-child.pid, "SIGKILL"));
  let up = false;
  for (const end = Date.now() + 15_000; !up && Date.now() < end; ) {
    up = await fetch(url + "/health").then((r) => r.ok, () => false);
    if (!up) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(up, `the server did not come up: ${log}`);

  const put = await fetch(url + "/v3/kv/put", { method: "POST", body: JSON.stringify({ key: b64("k"), value: b64("from the gateway") }) });
  assert.equal(put.status, 200);

  const root = loadRoot();
  const Req = root.lookupType("etcdserverpb.RangeRequest");
  const Res = root.lookupType("etcdserverpb.RangeResponse");
  const msg = Req.encode({ key: Buffer.from("k") }).finish();
  const body = Buffer.alloc(5 + msg.length);
  body.writeUInt32BE(msg.length, 1);
  body.set(msg, 5);
  const session = http2Connect(url);
  session.on("error", () => {});
  t.after(() => session.close());
  const { status, data } = await within(
    new Promise((ok, fail) => {
      const s = session.request({ ":method": "POST", ":path": "/etcdserverpb.KV/Range", "content-type": "application/grpc", te: "trailers" });
      const chunks = [];
      let status;
      s.on("trailers", (h) => (status = h["grpc-status"]));
      s.on("data", (d) => chunks.push(d));
      s.on("error", fail);
      s.on("close", () => ok({ status, data: Buffer.concat(chunks) }));
      s.end(body);
    }),
    10_000,
    "the gRPC Range",
  );
  assert.equal(status, "0", log);
  const res = Res.decode(data.subarray(5));
  assert.deepEqual(res.kvs.map((kv) => kv.value.toString()), ["from the gateway"]);

  // The demo page and the browser entry it imports, from the installed packages.
  const page = await fetch(url + "/");
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<script type="importmap">/);
  for (const path of ["/app.mjs", "/edge-lease/entries/browser.mjs", "/edge-lease/client/index.mjs", "/edge-lease/pkg/edge_lease_bg.wasm"]) {
    const r = await fetch(url + path);
    assert.equal(r.status, 200, path);
    await r.arrayBuffer();
  }
});
