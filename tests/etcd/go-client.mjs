// etcd's own Go client (clientv3 3.4, from Debian's golang-etcd-server-dev)
// driving the servers: test programs in tests/etcd/go/src/<name>, built in
// GOPATH mode, offline, into .cache/go (rebuilt when a source changes), and
// run with a bounded time.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { root } from "./harness.mjs";

const run = promisify(execFile);
const built = new Map();

function env() {
  const cache = join(root, ".cache/go");
  return {
    ...process.env,
    GO111MODULE: "off",
    GOPROXY: "off",
    GOFLAGS: "",
    GOPATH: `${join(root, "tests/etcd/go")}:/usr/share/gocode`,
    GOCACHE: join(cache, "build"),
  };
}

/** The path of the built program `name` (built once per source). */
export function goProgram(name) {
  if (!built.has(name)) {
    built.set(
      name,
      (async () => {
        const src = join(root, "tests/etcd/go/src", name);
        const hash = createHash("sha256");
        for (const f of readdirSync(src).sort()) hash.update(f).update(readFileSync(join(src, f)));
        const bin = join(root, ".cache/go/bin", `${name}-${hash.digest("hex").slice(0, 16)}`);
        if (!existsSync(bin)) {
          mkdirSync(join(root, ".cache/go/bin"), { recursive: true });
          await run("go", ["build", "-o", bin, `./tests/etcd/go/src/${name}`], { cwd: root, env: env(), timeout: 300_000 });
        }
        return bin;
      })(),
    );
  }
  return built.get(name);
}

/** Runs program `name` with `args`; its stdout parsed as JSON. */
export async function runGo(name, args, { timeout = 30_000 } = {}) {
  const bin = await goProgram(name);
  const { stdout } = await run(bin, args, { timeout, env: process.env });
  return JSON.parse(stdout);
}
