// Compaction: a new generation. The live journal is sealed and continued in
// journal-<g+1> at once; snapshot-<g+1> is then written in the background,
// renamed into place, and generation <g> removed. A crash or failure at any
// point leaves files that restore to the same data.
//
// What the event loop waits for stays short whatever the sizes: journal-<g+1>
// can be made ahead, off the loop (prepareGeneration), so the switch itself
// is the seal's one fdatasync; the snapshot's data is synced every
// SNAPSHOT_SYNC_BYTES as it is written, so the journal's own syncs never
// queue behind tens of MiB of it reaching the disk at once (they did: a
// 74-157 ms request at each rollover of a 52-101 MB journal).

import { closeSync, openSync, unlinkSync } from "node:fs";
import { open as openAsync, readdir as readdirAsync, rename as renameAsync, unlink as unlinkAsync } from "node:fs/promises";
import { join } from "node:path";
import { createFile, createFileAsync, fsyncDirAsync } from "./durable-fs.mjs";
import { encodeSnapshot, FILE_HEADER, fileHeader, gens, JOURNAL } from "./format.mjs";

// The snapshot's data written between two of its syncs.
const SNAPSHOT_SYNC_BYTES = 4 << 20;

/**
 * Makes journal-<gen>, empty, off the event loop, for a later
 * startGeneration(..., { prepared: true }); resolves to whether it is in
 * place. `stillNext()` is asked just before it is renamed into place: if
 * journal-<gen> went live meanwhile (a compaction that made its own), the
 * file is dropped, never put over it. An empty journal after the live one
 * is what a compaction that died before its seal leaves: a restart removes
 * it (replay.mjs).
 */
export function prepareGeneration(dir, gen, stillNext) {
  return createFileAsync(dir, `journal-${gen}.next.tmp`, `journal-${gen}`, fileHeader(JOURNAL, gen), stillNext);
}

/**
 * Continues `journal` (a LiveJournal) in journal-<gen>: created whole (or
 * made ahead by prepareGeneration: `prepared`), then the live journal is
 * sealed (naming it as its continuation) and closed. Throws, having
 * changed nothing the store reads, if that fails.
 */
export function startGeneration(dir, journal, gen, { prepared = false } = {}) {
  const name = `journal-${gen}`;
  if (!prepared) createFile(dir, name, fileHeader(JOURNAL, gen));
  let fd;
  try {
    fd = openSync(join(dir, name), "r+");
    journal.seal();
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    unlinkSync(join(dir, name)); // unsealed: an empty journal after it is just ignored
    throw e;
  }
  journal.continueIn(fd, gen, FILE_HEADER);
}

/**
 * Writes `entries` as snapshot-<gen> (a temp file, an `await` after each
 * record, fsync, rename), then removes the generations before it.
 * `stop()` throws to abandon it (the store closed or failed); `durableSoFar()`
 * resolves once the journal's records so far are durable; `placed(size)`
 * hears that the snapshot is in place.
 */
export async function writeSnapshot(dir, gen, entries, { stop, durableSoFar, placed }) {
  const tmp = join(dir, `snapshot-${gen}.tmp`);
  stop();
  const fh = await openAsync(tmp, "w");
  let size = 0;
  let synced = 0;
  try {
    for (const chunk of encodeSnapshot(entries, gen)) {
      stop();
      await fh.write(chunk, 0, chunk.length, size);
      size += chunk.length;
      if (size - synced >= SNAPSHOT_SYNC_BYTES) {
        await fh.datasync();
        synced = size;
      }
    }
    await fh.sync();
  } catch (e) {
    await fh.close();
    await unlinkAsync(tmp).catch(() => {});
    throw e;
  }
  await fh.close();
  try {
    // Entries read as it went may hold writes whose records are not yet
    // durable: they are before it replaces the old files.
    stop();
    if (!Array.isArray(entries)) await durableSoFar();
    stop();
  } catch (e) {
    await unlinkAsync(tmp).catch(() => {});
    throw e;
  }
  await renameAsync(tmp, join(dir, `snapshot-${gen}`));
  await fsyncDirAsync(dir);
  placed(size);
  // Older generations are covered by the new snapshot now.
  stop();
  const names = await readdirAsync(dir);
  for (const g of gens(names, "journal")) if (g < gen) await unlinkAsync(join(dir, `journal-${g}`));
  for (const g of gens(names, "snapshot")) if (g < gen) await unlinkAsync(join(dir, `snapshot-${g}`));
  await fsyncDirAsync(dir);
}

/**
 * Whether a journal of `journal` bytes (records, not its header) is due for
 * compaction beside a snapshot of `snapshot` bytes: past `minCompactBytes`
 * and past either `compactFactor` times the snapshot or `maxJournalBytes`.
 */
export function compactionDue(journal, snapshot, { minCompactBytes, compactFactor, maxJournalBytes }) {
  if (journal < minCompactBytes) return false;
  return journal >= compactFactor * snapshot || journal >= maxJournalBytes;
}
