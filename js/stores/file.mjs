// A durable store for Node: an append-only journal of batches plus a
// compacted snapshot, in one directory that one process holds at a time.
// The format is described in js/stores/file/format.mjs, which says where
// each part lives; this module is the store that puts them together.

import { closeSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { isBatch } from "../codec.js";
import { LeaseError } from "../errors.js";
import { compactionDue, prepareGeneration, startGeneration, writeSnapshot } from "./file/compaction.mjs";
import { createFile, fsyncDir } from "./file/durable-fs.mjs";
import { BATCH, batchRecord, FILE_HEADER, fileHeader, gens, JOURNAL } from "./file/format.mjs";
import { handOver } from "./file/hand-over.mjs";
import { LiveJournal } from "./file/journal.mjs";
import { acquireLock, releaseLock } from "./file/lock.mjs";
import { migrateV1 } from "./file/migrate-v1.mjs";
import { openPart, readStore } from "./file/replay.mjs";

export { crc32 } from "./file/format.mjs";
export { readView } from "./file/replay.mjs";

export class FileStore {
  #dir;
  #lock;
  // The LiveJournal, once open.
  #journal = null;
  #snapshotBytes;
  #compactFactor;
  #minCompactBytes;
  #maxJournalBytes;
  // The entries read by open (a handOver), until entries() hands them over.
  #opened;
  // Entries not yet all read (handOvers), which hold files open: let go by
  // close() at the latest.
  #handing = new Set();
  #closed = false;
  // The snapshot writes in progress (a promise), or null.
  #compacting = null;
  // The next journal being made ahead (a promise), or null; and the
  // generation of the one made, until a compaction takes it.
  #preparing = null;
  #prepared = 0;
  #released = false;

  /**
   * Opens (creating if needed) the store in `dir` and takes its lock,
   * replaying it once so a corrupt or incomplete store fails here and a torn
   * last record is cut off before any new record is appended after it.
   */
  static open(dir, options = {}) {
    return new FileStore(dir, options);
  }

  constructor(dir, options = {}) {
    if (typeof dir !== "string" || dir === "") throw new TypeError("FileStore.open(dir): dir must be a path");
    this.#dir = dir;
    this.#compactFactor = options.compactFactor ?? 4;
    this.#minCompactBytes = options.minCompactBytes ?? 1 << 20;
    this.#maxJournalBytes = options.maxJournalBytes ?? 256 << 20;
    mkdirSync(dir, { recursive: true });
    this.#lock = acquireLock(dir);
    try {
      this.#open(options);
    } catch (e) {
      this.#closeHanding();
      this.#release();
      throw e;
    }
  }

  #release() {
    if (this.#released) return;
    this.#released = true;
    releaseLock(this.#lock);
  }

  #open(options) {
    const dir = this.#dir;
    let names = readdirSync(dir);
    let changed = false;
    for (const n of names) {
      // A file some crash left half-written, never renamed into place.
      if (n.endsWith(".tmp") && !n.startsWith("lock.")) {
        unlinkSync(join(dir, n));
        changed = true;
      }
    }
    if (names.includes("journal")) {
      if (gens(names, "snapshot").length === 0) migrateV1(dir, names);
      else for (const n of ["journal", "snapshot"]) if (names.includes(n)) unlinkSync(join(dir, n)); // migrated already
      names = readdirSync(dir);
      changed = true;
    }
    const fds = [];
    const s = readStore(dir, names, fds);
    this.#opened = this.#handOver([...s.map], fds);
    for (const n of s.obsolete) unlinkSync(join(dir, n));
    if (s.live === null) {
      createFile(dir, "journal-1", fileHeader(JOURNAL, 1));
      s.live = { gen: 1, good: FILE_HEADER, size: FILE_HEADER };
    }
    const fd = openSync(join(dir, `journal-${s.live.gen}`), "r+");
    try {
      if (s.live.good < s.live.size) {
        ftruncateSync(fd, s.live.good);
        fsyncSync(fd);
      }
      if (changed || s.obsolete.length > 0) fsyncDir(dir);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    this.#journal = new LiveJournal(fd, s.live.gen, s.live.good, options);
    this.#snapshotBytes = s.snapshotBytes;
  }

  // Entries to hand over once, their files kept open until they are read.
  #handOver(list, fds) {
    const entries = handOver(list, fds, () => this.#handing.delete(entries));
    this.#handing.add(entries);
    return entries;
  }

  #closeHanding() {
    for (const entries of [...this.#handing]) entries.return();
  }

  /**
   * The stored `[key, Uint8Array]` entries, for `new Lessor({ restore })`:
   * to be read once, each let go as it is read.
   */
  entries() {
    if (this.#opened) {
      const entries = this.#opened;
      this.#opened = null; // the lessor now holds the state: do not keep a copy
      return entries;
    }
    this.#check();
    const fds = [];
    return this.#handOver([...readStore(this.#dir, readdirSync(this.#dir), fds).map], fds);
  }

  // What open read, never asked for: let go (its files may be compacted away).
  #dropOpened() {
    this.#opened?.return();
    this.#opened = null;
  }

  /**
   * Appends the batch and fsyncs: when this returns, it is durable. With
   * groupCommit, returns at once with a promise that resolves when the
   * batch is appended and an fsync has made it durable (a failed append or
   * fsync rejects it and fails the store).
   */
  write(batch) {
    this.#check();
    // A batch handed over packed (as the core hands its own) is appended as
    // it is, once it checks out: the journal frames it as it writes it, with
    // no copy (the core's buffer is this batch's own).
    const packed = batch.bytes;
    const rec = packed instanceof Uint8Array && isBatch(packed) ? { type: BATCH, payload: packed } : batchRecord(batch.put, batch.delete);
    return this.#journal.write(rec);
  }

  /** Bytes of records appended to the journal since the store was opened (a server's metrics). */
  get bytesWritten() {
    return this.#journal.written;
  }

  /** With groupCommit: batches may come before earlier ones are durable (the journal keeps their order). */
  get pipelined() {
    return this.#journal.group;
  }

  /**
   * The store's durable state now, to be read elsewhere (`readView`, in a
   * worker thread, say): its files, opened, so that a compaction removing
   * them meanwhile takes nothing away, and the live journal only up to its
   * last record an fsync has covered. That is the lessor's state after some
   * write, every acknowledged one included (writes whose fsync is still to
   * come are not in it). `close()` it once read; `files` is plain data a
   * worker can be given.
   */
  view() {
    this.#check();
    const dir = this.#dir;
    const live = this.#journal;
    for (let attempt = 0; ; attempt++) {
      const S = gens(readdirSync(dir), "snapshot").at(-1) ?? 0;
      const files = [];
      try {
        if (S > 0) files.push(openPart(dir, "snapshot", S));
        for (let g = Math.max(S, 1); g < live.gen; g++) files.push(openPart(dir, "journal", g));
        files.push(openPart(dir, "journal", live.gen, live.durableBytes));
      } catch (e) {
        for (const f of files) closeSync(f.fd);
        // A compaction finished between the listing and the opens.
        if (e.code === "ENOENT" && attempt < 3) continue;
        throw e;
      }
      let open = true;
      const close = () => {
        if (open) for (const f of files) closeSync(f.fd);
        open = false;
      };
      return { files, close };
    }
  }

  /** Bytes in the live journal and in the snapshot (file headers included), and a file header's. */
  get sizes() {
    return { journal: this.#journal.bytes, snapshot: this.#snapshotBytes, header: FILE_HEADER };
  }

  /** The generation of the live journal (1 for a new store, +1 per compaction). */
  get generation() {
    return this.#journal.gen;
  }

  /**
   * Replaces everything with `entries`: an array that includes every write
   * made so far (`lessor.snapshot()`), or a fresh `lessor.snapshotEntries()`,
   * read only as the snapshot is written (the writes made meanwhile are in
   * the new journal, which a restore applies over it). At once
   * (synchronously) new writes go to a new journal; the snapshot is then
   * written in chunks without blocking the event loop, fsync'd and renamed
   * into place, and the old journal and snapshot are removed. The promise
   * resolves when that is done. A crash or failure at any point leaves a
   * store that restores to the same data; a failed compaction is simply
   * redone by the next one.
   */
  compact(entries) {
    const gen = this.#journal.gen + 1;
    let list;
    try {
      this.#check();
      this.#dropOpened();
      if (typeof entries?.[Symbol.iterator] !== "function") throw new TypeError("compact(entries): entries must be an array or an iterable");
      list = entries;
      startGeneration(this.#dir, this.#journal, gen, { prepared: this.#prepared === gen });
      this.#prepared = 0;
    } catch (e) {
      return Promise.reject(e);
    }
    const journal = this.#journal;
    const stop = () => {
      if (this.#closed) throw new LeaseError("Closed", "the file store was closed during a compaction");
      // The lessor may hold changes whose records the journal lost: no
      // snapshot of them replaces the files.
      if (journal.broken) throw new LeaseError("StorageFailed", `the journal failed during a compaction: ${journal.broken.message}`);
    };
    const steps = { stop, durableSoFar: () => journal.durableSoFar(), placed: (size) => (this.#snapshotBytes = size) };
    // One snapshot written at a time, in order: each removes the files
    // older than itself.
    const run = (this.#compacting ?? Promise.resolve())
      .catch(() => {})
      .then(() => writeSnapshot(this.#dir, gen, list, steps))
      .finally(() => {
        if (this.#compacting === run) this.#compacting = null;
        if (this.#closed && this.#compacting === null && this.#preparing === null) this.#release();
      });
    this.#compacting = run;
    return run;
  }

  /**
   * Compacts from `lessor.snapshotEntries()` (read as it is written) when
   * the journal has grown past `minCompactBytes` (default 1 MiB) and either
   * past `compactFactor` (default 4) times the snapshot or past
   * `maxJournalBytes` (default 256 MiB), or always with `{ force: true }`.
   * Call it between operations, not from inside one. Resolves to whether it
   * compacted; while a compaction is still being written, an unforced call
   * does nothing.
   */
  async compactFrom(lessor, { force = false } = {}) {
    const due = compactionDue(this.#journal.bytes - FILE_HEADER, this.#snapshotBytes, {
      minCompactBytes: this.#minCompactBytes,
      compactFactor: this.#compactFactor,
      maxJournalBytes: this.#maxJournalBytes,
    });
    if (!force && (this.#compacting || this.#preparing || !due)) return false;
    await this.#prepare();
    // Read as it is written: a large snapshot does not stop the server.
    await this.compact(typeof lessor.snapshotEntries === "function" ? lessor.snapshotEntries() : lessor.snapshot());
    return true;
  }

  // Makes the next journal off the event loop, so that the compaction's
  // switch to it does not create and sync a file on the loop. Best effort:
  // on failure compact() creates it as before.
  async #prepare() {
    const gen = this.#journal.gen + 1;
    if (this.#prepared === gen || this.#preparing || this.#closed) return;
    const stillNext = () => !this.#closed && this.#journal.gen + 1 === gen;
    const run = prepareGeneration(this.#dir, gen, stillNext)
      .then((placed) => {
        if (placed && stillNext()) this.#prepared = gen;
      })
      .catch(() => {})
      .finally(() => {
        this.#preparing = null;
        if (this.#closed && this.#compacting === null) this.#release();
      });
    this.#preparing = run;
    await run;
  }

  /**
   * Closes the journal at once (later writes throw Closed). Resolves when
   * the lock is released: at once, or once a compaction in progress has
   * stopped (the store it leaves restores to the same data).
   */
  close() {
    const busy = () => [this.#compacting, this.#preparing].filter(Boolean).map((p) => p.catch(() => {}));
    if (this.#closed) return Promise.all(busy()).then(() => {});
    this.#closed = true;
    this.#opened = null;
    this.#closeHanding();
    this.#journal.close();
    if (this.#compacting || this.#preparing) return Promise.all(busy()).then(() => {});
    this.#release();
    return Promise.resolve();
  }

  #check() {
    if (this.#closed) throw new LeaseError("Closed", "the file store is closed");
    const broken = this.#journal.broken;
    if (broken) throw new LeaseError("StorageFailed", `the journal could not be repaired after a failed write: ${broken.message}`);
  }
}
