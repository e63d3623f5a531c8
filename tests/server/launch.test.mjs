// server/main.mjs run as a program (npx edge-lease-etcd, npm start): its
// #! line gives glibc's malloc a fixed mmap threshold, so that big buffers
// are given back when freed, and Node a smaller young generation
// (docs/server.md, "Memory"); a user's own GLIBC_TUNABLES come after it
// (the last of a tunable is the one in force).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer } from "./slow-clients.mjs";
import { root } from "../etcd/harness.mjs";

const linux = process.platform === "linux";

test("run as a program, the server starts with glibc's mmap threshold fixed and a 4 MiB semi-space", { skip: !linux }, async (t) => {
  const server = await startServer({ program: true, env: { GLIBC_TUNABLES: "" } });
  t.after(() => server.stop());
  const env = readFileSync(`/proc/${server.pid}/environ`, "utf8").split("\0");
  assert.ok(env.includes("GLIBC_TUNABLES=glibc.malloc.mmap_threshold=32768"), env.filter((v) => v.startsWith("GLIBC")).join());
  const argv = readFileSync(`/proc/${server.pid}/cmdline`, "utf8").split("\0");
  assert.ok(argv.includes("--max-semi-space-size=4"), argv.join(" "));
  assert.equal((await fetch(server.url + "/health")).status, 200);
});

test("the #! line puts the user's GLIBC_TUNABLES after its own", { skip: !linux }, () => {
  const line = readFileSync(join(root, "server/main.mjs"), "utf8").split("\n")[0];
  const m = /^#!(\S+) -S (.*) node( .*)?$/.exec(line);
  assert.ok(m, line);
  // The same line, running a node that prints what it was given.
  const seen = (user) =>
    execFileSync(m[1], ["-S", `${m[2]} ${process.execPath}${m[3] ?? ""} -p process.env.GLIBC_TUNABLES`], { env: { ...process.env, GLIBC_TUNABLES: user }, encoding: "utf8" }).trim();
  assert.equal(seen(""), "glibc.malloc.mmap_threshold=32768:");
  assert.equal(seen("glibc.malloc.mmap_threshold=65536"), "glibc.malloc.mmap_threshold=32768:glibc.malloc.mmap_threshold=65536");
});
