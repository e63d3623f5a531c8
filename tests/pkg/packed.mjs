// The packages as a user gets them: `npm pack` of the edge package (js/,
// edge-lease) and of the etcd package (this repository's root,
// edge-lease-etcd), both installed from their tarballs into a fresh project.
// Every test file of a run shares one install:
// node --test runs each file in its own process, so the cache is a temp dir
// named after a hash of everything that goes into the tarball (package.json,
// README.md, BENCHMARKS.md and the js/, dist/, pkg/, etcd/, server/, worker/, docs/ and examples/ trees; pkg/ is
// gitignored, so HEAD and the dirty state alone would miss a wasm rebuild). Older installs are removed
// when a new one is made, so at most one is left in the temp dir.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = fileURLToPath(new URL("../..", import.meta.url));
const PREFIX = "edge-lease-packed-";

function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
    .sort();
}

function contentHash() {
  const h = createHash("sha256");
  const dirs = ["js", "dist", "etcd", "server", "worker", "www", "docs", "examples"];
  const files = [join(repo, "package.json"), join(repo, "README.md"), join(repo, "BENCHMARKS.md"), ...dirs.flatMap((d) => filesUnder(join(repo, d)))];
  for (const f of files) {
    h.update(relative(repo, f)).update("\0").update(readFileSync(f)).update("\0");
  }
  return h.digest("hex").slice(0, 16);
}

const npm = (args, cwd) =>
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 120_000,
  });

/** `npm pack` of the package in `dir` into `dest`: its `npm pack --json` record, with the tarball's path. */
export function pack(dir, dest) {
  const [packed] = JSON.parse(npm(["pack", "--json", "--pack-destination", dest], dir));
  return { ...packed, path: join(dest, packed.filename) };
}

/**
 * Returns the temp project dir that has edge-lease and edge-lease-etcd
 * installed from their packed tarballs (node_modules/edge-lease,
 * node_modules/edge-lease-etcd).
 */
export function packedProject() {
  const hash = contentHash();
  const dir = join(tmpdir(), PREFIX + hash);
  if (existsSync(join(dir, "node_modules", "edge-lease", "package.json"))) return dir;

  // Installs of other contents are stale. Same-hash work dirs may belong
  // to a test file packing concurrently: leave them.
  for (const old of readdirSync(tmpdir())) {
    if (old.startsWith(PREFIX) && !old.startsWith(PREFIX + hash)) {
      rmSync(join(tmpdir(), old), { recursive: true, force: true });
    }
  }
  // Build next to the final dir and rename, so a concurrent test file never
  // sees a half-installed project.
  const work = `${dir}.${process.pid}`;
  mkdirSync(work, { recursive: true });
  try {
    const edge = pack(join(repo, "js"), work);
    const etcd = pack(repo, work);
    writeFileSync(join(work, "package.json"), JSON.stringify({ name: "edge-lease-user", private: true }));
    // The etcd package's own dependencies (protobufjs and yaml) come from
    // npm's cache when it is there: `npm install` cached the tarballs, but
    // not the registry's metadata that resolving a fresh project's install
    // needs, so on a new machine that is fetched once. Its edge-lease is the
    // tarball beside it.
    npm(["install", "--prefer-offline", edge.path, etcd.path], work);
    try {
      renameSync(work, dir);
    } catch (e) {
      if (!existsSync(dir)) throw e; // else another test file won the race
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}
