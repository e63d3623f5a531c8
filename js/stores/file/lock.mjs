// The directory lock: one process holds a store at a time.

import { closeSync, linkSync, openSync, readFileSync, renameSync, unlinkSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { LeaseError } from "../../errors.js";
import { writeAll } from "./durable-fs.mjs";

// Lock files this process holds, so a second open in the same process is
// refused as well (its pid is alive: ours).
const held = new Set();

function bootId() {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null; // not Linux: a lock from before a reboot is judged by its pid alone
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM"; // exists, owned by someone else
  }
}

function locked(dir, holder, why) {
  return new LeaseError(
    "Locked",
    `${dir} is in use by ${holder ? `process ${holder.pid} on ${holder.host}` : "another process"}${why ? ` (${why})` : ""}`,
    { pid: holder?.pid },
  );
}

// Whether the lock text `text` belongs to a process that may still run.
function holderOf(text) {
  try {
    const h = JSON.parse(text);
    return typeof h.pid === "number" ? h : null;
  } catch {
    return null;
  }
}

function isStale(h) {
  if (h.host !== hostname()) return false; // cannot ask another machine
  const boot = bootId();
  if (boot !== null && h.boot !== boot) return true; // from before a reboot
  if (h.pid === process.pid) return !held.has(h.nonce); // our pid, reused (a container's pid 1)
  return !alive(h.pid);
}

/**
 * Takes `<dir>/lock` (created whole by link(2), which fails if it exists),
 * breaking it if its holder is gone. Returns the text written, to release
 * it later.
 */
export function acquireLock(dir) {
  const path = join(dir, "lock");
  const nonce = randomUUID();
  const mine = JSON.stringify({ pid: process.pid, host: hostname(), boot: bootId(), nonce });
  const tmp = `${path}.${nonce}.tmp`;
  // Not fsync'd: a power loss ends every holder anyway, and a lock it left
  // empty or zero-filled is judged stale below.
  const fd = openSync(tmp, "w");
  try {
    writeAll(fd, Buffer.from(mine), 0);
  } finally {
    closeSync(fd);
  }
  try {
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        linkSync(tmp, path);
        held.add(nonce);
        return { path, text: mine, nonce };
      } catch (e) {
        if (e.code !== "EEXIST") throw e;
      }
      let text;
      try {
        text = readFileSync(path, "utf8");
      } catch (e) {
        if (e.code === "ENOENT") continue; // released meanwhile
        throw e;
      }
      const h = holderOf(text);
      // Empty or zeros: left by a power loss (a live holder's lock is
      // linked into place already written). Anything else is not guessed at.
      const lost = /^\0*$/.test(text);
      if (!h && !lost) throw locked(dir, null, `unreadable ${path}: remove it if no process uses the store`);
      if (h && !isStale(h)) throw locked(dir, h);
      // Its holder is gone. Move it aside (atomic: of two processes breaking
      // it at once, one gets it) and check that what moved is what was
      // judged stale, not a lock just taken by a live process.
      const aside = `${path}.${nonce}.stale`;
      try {
        renameSync(path, aside);
      } catch (e) {
        if (e.code === "ENOENT") continue;
        throw e;
      }
      const moved = readFileSync(aside, "utf8");
      if (moved !== text) {
        try {
          linkSync(aside, path); // give it back
        } finally {
          unlinkSync(aside);
        }
        throw locked(dir, holderOf(moved));
      }
      unlinkSync(aside);
    }
    throw locked(dir, null, "the lock kept changing hands");
  } finally {
    unlinkSync(tmp);
  }
}

export function releaseLock(lock) {
  held.delete(lock.nonce);
  try {
    if (readFileSync(lock.path, "utf8") === lock.text) unlinkSync(lock.path);
  } catch {
    // Gone already: nothing to release.
  }
}
