// The live journal: records appended and made durable, one fsync per write
// or (groupCommit) one per round of the writes handed in meanwhile, run off
// the event loop; the file extended ahead of its records (the reserve) so
// that an append needs only fdatasync.

import { closeSync, fdatasync as fdatasyncCallback, fdatasyncSync, fsyncSync, ftruncateSync } from "node:fs";
import { LeaseError } from "../../errors.js";
import { writeAll } from "./durable-fs.mjs";
import { crc32, JOURNAL_STEP, REC_HEADER, record, recordHeader, SEAL } from "./format.mjs";

// The longest fsync that may run on the event loop (LiveJournal.#sync).
const LOOP_SYNC_MAX_MS = 2;

// A round of records larger than this is appended in parts of about this
// many bytes, one part per turn of the event loop, before its fsync: the
// record of a revoke of 100k keys is megabytes (18.8 MB), whose checksum
// and write in one go held every other client (issue 31). A part is a few
// milliseconds of writing (page cache), so that the round's fsync does not
// wait behind many turns of other work either.
const APPEND_STEP = 4 << 20;
// Checksumming is cheaper than writing: a part checksums this many times
// the bytes it would write.
const CRC_PER_WRITE = 4;

// A record as the buffers that go to the file: a framed record as it is,
// a `{ type, payload }` one with its header made now.
function framed(rec) {
  return rec instanceof Uint8Array ? rec : Buffer.concat([recordHeader(rec.type, rec.payload.length, crc32(rec.payload)), rec.payload]);
}

const sizeOf = (rec) => (rec instanceof Uint8Array ? rec.length : REC_HEADER + rec.payload.length);

export class LiveJournal {
  #fd;
  #gen;
  #bytes;
  // The bytes an fsync has covered (a record boundary).
  #durableBytes;
  // The file's size: its records and the space reserved after them.
  #allocated;
  #broken = null;
  // Group commit: whether an fsync runs now, who waits for the one after it,
  // and journal fds to close once the running fsync is done with them.
  #group;
  #syncing = false;
  #scheduled = false;
  // How many writes the last fsync covered.
  #lastRound = 0;
  // The last fsync took longer than a sync on the event loop may (below).
  #slowSync = false;
  #loopSyncMaxMs;
  // Hears how long each journal sync took (ms), for a server's metrics.
  #onSync;
  #written = 0; // bytes appended since open
  // Records written and not yet appended (this turn's), and who waits.
  #pending = [];
  #pendingBytes = 0;
  #waiting = [];
  #retired = [];
  // A round being appended in parts (#syncInSteps), or null.
  #steps = null;

  /** journal-<gen>, open on `fd`, whose records (all durable) end at `bytes`. */
  constructor(fd, gen, bytes, { groupCommit = false, loopSyncMaxMs = LOOP_SYNC_MAX_MS, onSync = null } = {}) {
    this.#fd = fd;
    this.#gen = gen;
    this.#bytes = bytes;
    this.#durableBytes = bytes;
    this.#allocated = bytes;
    this.#group = Boolean(groupCommit);
    this.#loopSyncMaxMs = loopSyncMaxMs;
    this.#onSync = onSync;
  }

  get gen() {
    return this.#gen;
  }

  /** Bytes of the journal's records (file header included). */
  get bytes() {
    return this.#bytes;
  }

  get durableBytes() {
    return this.#durableBytes;
  }

  get written() {
    return this.#written;
  }

  get group() {
    return this.#group;
  }

  /** The failure that left the journal's tail unknown (no more writes), or null. */
  get broken() {
    return this.#broken;
  }

  /**
   * Appends `rec` and syncs; with groupCommit, queues it and returns a
   * promise that resolves once an fsync has covered it. `rec`: a framed
   * record, or `{ type, payload }`, framed as it is written (a payload the
   * caller no longer changes: it is kept, not copied).
   */
  write(rec) {
    if (!this.#group) return this.#append(framed(rec));
    this.#pending.push(rec);
    this.#pendingBytes += sizeOf(rec);
    return this.#nextRound();
  }

  // A waiter in the next round. The round starts once this turn's writes
  // are in: they share one append and one fsync.
  #nextRound() {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#syncing && !this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          if (!this.#syncing && this.#waiting.length > 0 && this.#fd !== null) this.#sync();
        });
      }
    });
  }

  /**
   * Resolves once every record handed in so far is durable (with
   * groupCommit: a waiter with no record of its own in the next round).
   */
  durableSoFar() {
    if (this.#fd === null) return Promise.reject(new LeaseError("Closed", "the file store is closed"));
    if (!this.#group || (this.#pending.length === 0 && this.#waiting.length === 0 && !this.#syncing)) return Promise.resolve();
    return this.#nextRound();
  }

  // One fsync for everything appended so far; records appended meanwhile
  // wait for the next one. It runs on libuv's pool, off the event loop, so
  // the next writes' work overlaps it; but a lone write after a lone write
  // (one writer at a time) is synced on the event loop: the pool's round
  // trip (a thread's wake-up, the completion's way back) was most of its
  // latency and all of its tail (measured under load: p50 0.26 -> 0.16 ms,
  // p99 1.8 -> 0.5 ms). Only while syncs are fast: a stalled disk must not
  // stall the loop (keepalives, reads, the expiry timer), so after a sync
  // slower than loopSyncMaxMs they all go to the pool until one is fast again.
  #sync() {
    if (this.#pendingBytes > APPEND_STEP) return this.#syncInSteps();
    if (!this.#appendPending()) return;
    const round = this.#waiting;
    this.#waiting = [];
    const lone = round.length === 1 && this.#lastRound === 1 && !this.#slowSync;
    this.#lastRound = round.length;
    const start = performance.now();
    const covers = { gen: this.#gen, bytes: this.#bytes };
    if (lone) {
      let err = null;
      try {
        fdatasyncSync(this.#fd);
      } catch (e) {
        err = e;
      }
      this.#timed(start);
      return this.#synced(round, err, covers);
    }
    this.#syncing = true;
    fdatasyncCallback(this.#fd, (err) => {
      this.#syncing = false;
      this.#timed(start);
      this.#synced(round, err, covers);
    });
  }

  // #sync for a large round: its records checksummed and appended a part
  // per turn (other clients are served in between), then one fsync as any
  // round. A crash meanwhile leaves what a write cut short leaves: a torn
  // tail (nothing of the round was acknowledged).
  #syncInSteps() {
    const job = { recs: this.#pending, i: 0, crcOff: 0, crc: 0, off: 0, start: this.#bytes, pos: this.#bytes, round: this.#waiting };
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#waiting = [];
    this.#lastRound = job.round.length;
    this.#syncing = true;
    this.#steps = job;
    const step = () => {
      if (this.#steps !== job) return; // finished meanwhile (seal, close)
      if (!this.#stepAppend(job, APPEND_STEP)) return;
      if (job.i < job.recs.length) return void setImmediate(step);
      this.#steps = null;
      const start = performance.now();
      const covers = { gen: this.#gen, bytes: this.#bytes };
      fdatasyncCallback(this.#fd, (err) => {
        this.#syncing = false;
        this.#timed(start);
        this.#synced(job.round, err, covers);
      });
    };
    step();
  }

  // Appends about `budget` bytes more of a stepped round (all of it once
  // its records are all written: the headers too); false if it failed,
  // which fails the store as a failed append does.
  #stepAppend(job, budget) {
    try {
      this.#reserve(job.start + job.recs.reduce((n, r) => n + sizeOf(r), 0));
      while (job.i < job.recs.length && budget > 0) {
        const rec = job.recs[job.i];
        if (rec instanceof Uint8Array) {
          writeAll(this.#fd, rec, job.pos);
          job.pos += rec.length;
          budget -= rec.length;
          job.i++;
          continue;
        }
        // Its checksum first, in parts, then its header (so a crash midway
        // leaves a whole header before a payload with zero blocks: a torn
        // tail, as a write cut short), then the payload, in parts.
        if (job.crcOff < rec.payload.length) {
          const part = rec.payload.subarray(job.crcOff, job.crcOff + budget * CRC_PER_WRITE);
          job.crc = crc32(part, job.crc);
          job.crcOff += part.length;
          budget -= Math.ceil(part.length / CRC_PER_WRITE);
          continue;
        }
        if (job.off === 0) {
          writeAll(this.#fd, recordHeader(rec.type, rec.payload.length, job.crc), job.pos);
          job.pos += REC_HEADER;
        }
        const part = rec.payload.subarray(job.off, job.off + budget);
        writeAll(this.#fd, part, job.pos);
        job.pos += part.length;
        job.off += part.length;
        budget -= part.length;
        if (job.off === rec.payload.length) {
          job.off = 0;
          job.crcOff = 0;
          job.crc = 0;
          job.i++;
        }
      }
      if (job.i < job.recs.length) return true;
      this.#written += job.pos - job.start;
      this.#bytes = job.pos;
      return true;
    } catch (e) {
      this.#steps = null;
      this.#syncing = false;
      try {
        ftruncateSync(this.#fd, job.start);
        this.#allocated = job.start;
        fsyncSync(this.#fd);
      } catch {
        // (broken below either way)
      }
      this.#broken ??= e;
      for (const w of [...job.round, ...this.#waiting.splice(0)]) w.reject(e);
      return false;
    }
  }

  // A stepped round still being appended is finished now, synchronously,
  // and made durable (before the journal is sealed or closed); false if
  // that failed.
  #finishSteps() {
    const job = this.#steps;
    if (job === null) return true;
    if (!this.#stepAppend(job, Infinity)) return false;
    this.#steps = null;
    this.#syncing = false;
    try {
      this.#syncNow();
    } catch (e) {
      this.#broken ??= e;
      for (const w of job.round) w.reject(e);
      return false;
    }
    this.#durableBytes = this.#bytes;
    for (const w of job.round) w.resolve();
    return true;
  }

  // The journal synced on the event loop, its time told to onSync.
  #syncNow() {
    const start = performance.now();
    fdatasyncSync(this.#fd);
    this.#onSync?.(performance.now() - start);
  }

  // A journal sync that began at `start` is over.
  #timed(start) {
    const ms = performance.now() - start;
    this.#slowSync = ms > this.#loopSyncMaxMs;
    this.#onSync?.(ms);
  }

  // `covers`: the journal and its length the fsync began with.
  #synced(round, err, covers) {
    for (const fd of this.#retired.splice(0)) closeSync(fd);
    if (!err && covers.gen === this.#gen) this.#durableBytes = covers.bytes;
    if (err) {
      // What the failed fsync covered may or may not be on disk: nothing
      // after it can be trusted to be, so the store takes no more writes.
      this.#broken ??= err;
      for (const w of [...round, ...this.#waiting.splice(0)]) w.reject(err);
      return;
    }
    for (const w of round) w.resolve();
    if (this.#waiting.length > 0 && this.#fd !== null) this.#sync();
  }

  // A journal fd is closed only once no fsync is running on it.
  #retire(fd) {
    if (this.#syncing) this.#retired.push(fd);
    else closeSync(fd);
  }

  // The records appended but not yet covered by an fsync are made durable
  // now, synchronously (before the journal is sealed or closed).
  #syncWaiting() {
    this.#finishSteps();
    if (this.#waiting.length === 0 || !this.#appendPending()) return;
    const round = this.#waiting.splice(0);
    this.#lastRound = round.length;
    try {
      this.#syncNow();
    } catch (e) {
      this.#broken ??= e;
      for (const w of round) w.reject(e);
      return;
    }
    this.#durableBytes = this.#bytes;
    for (const w of round) w.resolve();
  }

  // With groupCommit: the records written since the last round, in one
  // write. A failure fails the store (the lessor has applied them already)
  // and every write waiting; returns whether they were appended.
  #appendPending() {
    if (this.#pending.length === 0) return true;
    const recs = this.#pending.length === 1 ? framed(this.#pending[0]) : Buffer.concat(this.#pending.map(framed));
    this.#pending = [];
    this.#pendingBytes = 0;
    try {
      this.#append(recs, false);
      return true;
    } catch (e) {
      this.#broken ??= e;
      for (const w of this.#waiting.splice(0)) w.reject(e);
      return false;
    }
  }

  #append(rec, sync = true) {
    try {
      this.#reserve(this.#bytes + rec.length);
      writeAll(this.#fd, rec, this.#bytes);
      this.#written += rec.length;
      if (sync) this.#syncNow();
    } catch (e) {
      // Cut off whatever part of the record got written, so the failed
      // batch is not half-applied later and the next record is not stuck
      // behind garbage. If even that fails the journal's tail is unknown:
      // refuse further writes (reopening repairs or reports it).
      try {
        ftruncateSync(this.#fd, this.#bytes);
        this.#allocated = this.#bytes;
        fsyncSync(this.#fd);
      } catch (e2) {
        this.#broken = e2;
      }
      throw e;
    }
    this.#bytes += rec.length;
    if (sync) this.#durableBytes = this.#bytes;
  }

  // The file extended to hold records up to `end`, and a reserve after
  // them. The next sync covers the new size (fdatasync syncs a size change).
  #reserve(end) {
    if (end <= this.#allocated) return;
    const size = Math.ceil((end + 1) / JOURNAL_STEP) * JOURNAL_STEP;
    ftruncateSync(this.#fd, size);
    this.#allocated = size;
  }

  // Gives back the space reserved after the records. Best effort: zeros
  // after the records (or a SEAL) read as the journal's end.
  #trim() {
    if (this.#allocated === this.#bytes || this.#broken) return;
    try {
      ftruncateSync(this.#fd, this.#bytes);
      this.#allocated = this.#bytes;
    } catch {
      // The reserve stays.
    }
  }

  /**
   * Ends the journal with a SEAL record (its sync covers the records before
   * it), then trims it; throws, having sealed nothing, if that fails.
   */
  seal() {
    if (!this.#finishSteps() || !this.#appendPending()) throw this.#broken;
    this.#append(record(SEAL, 0));
    for (const w of this.#waiting.splice(0)) w.resolve();
    this.#trim(); // the sealed journal then ends at its SEAL
  }

  /** After seal(): continues in journal-<gen>, open on `fd`, just created (its file header only). */
  continueIn(fd, gen, bytes) {
    this.#retire(this.#fd);
    this.#fd = fd;
    this.#gen = gen;
    this.#bytes = bytes;
    this.#durableBytes = bytes;
    this.#allocated = bytes;
  }

  /** Makes what was appended durable, trims the reserve and closes the file. */
  close() {
    this.#syncWaiting();
    this.#trim();
    this.#retire(this.#fd);
    this.#fd = null;
  }
}
