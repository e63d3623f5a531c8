// File writes made durable: whole files (temp file, fsync, rename, fsync of
// the directory) and directory fsyncs, for the store's creates, renames and
// unlinks.

import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import { open as openAsync, unlink as unlinkAsync } from "node:fs/promises";
import { join } from "node:path";

export function fsyncDir(dir) {
  // Makes a create, rename or unlink durable. Some platforms cannot open a
  // directory for fsync (Windows): there the rename is as durable as it gets.
  let fd;
  try {
    fd = openSync(dir, "r");
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // EISDIR/EINVAL on filesystems without directory fsync.
  } finally {
    closeSync(fd);
  }
}

export async function fsyncDirAsync(dir) {
  let fh;
  try {
    fh = await openAsync(dir, "r");
  } catch {
    return;
  }
  try {
    await fh.sync();
  } catch {
    // as in fsyncDir
  } finally {
    await fh.close();
  }
}

export function writeAll(fd, buf, pos) {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, pos + done);
}

// Writes `path` whole: a temp file, fsync, rename, fsync of the directory.
export function createFile(dir, name, buf) {
  const tmp = join(dir, `${name}.tmp`);
  const fd = openSync(tmp, "w");
  try {
    writeAll(fd, buf, 0);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(dir, name));
  fsyncDir(dir);
}

/**
 * Writes `tmp` whole off the event loop (write, fsync), then, if `place()`
 * still says so, renames it to `name` (on the loop, so that the check and
 * the rename are one step) and fsyncs the directory; returns whether it did.
 * Otherwise the temp file is removed.
 */
export async function createFileAsync(dir, tmp, name, buf, place = () => true) {
  const fh = await openAsync(join(dir, tmp), "w");
  try {
    await fh.write(buf, 0, buf.length, 0);
    await fh.sync();
  } finally {
    await fh.close();
  }
  if (!place()) {
    await unlinkAsync(join(dir, tmp)).catch(() => {});
    return false;
  }
  renameSync(join(dir, tmp), join(dir, name));
  await fsyncDirAsync(dir);
  return true;
}
