// watch(): an async iterator of events over a backend's watch streams. A
// stream that drops (server restart, network blip) is resumed from the
// revision after the last one delivered: etcd never splits one revision's
// events across responses, and events are handed out only once their whole
// response has arrived, so nothing is lost or repeated. A start below the
// compaction point throws Compacted (with `compactRevision`).

import { entryOut } from "./entries.mjs";
import { LeaseError, aborted, closed, compacted } from "./errors.mjs";
import { linkSignals, sleep } from "./signals.mjs";

const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2000;

function eventOut(e, bytes) {
  const kv = entryOut(e.kv, bytes);
  const out = {
    type: e.type,
    key: kv.key,
    value: kv.value,
    modRevision: kv.modRevision,
    createRevision: kv.createRevision,
    version: kv.version,
    lease: kv.lease,
  };
  if (e.prev) out.prev = entryOut(e.prev, bytes);
  return out;
}

// Transient: the stream dropped or the server is away. Anything else (a bad
// request, Unimplemented, Closed, Aborted) ends the watch.
const retryable = (e) => e instanceof LeaseError && e.code === "Unavailable";

export class Watch {
  #backend;
  #req;
  #bytes;
  #stop; // aborts the current stream: the caller's signal, the client's close, or return()
  #dispose;
  #next = 0; // the revision to resume from; 0 until the first stream is created
  #stream = null; // the current backend iterator
  #gen;
  #ready;
  #returned = false; // return() ended it: pending next()s finish, not throw

  /** `closer`: the client's signal (close() ends every watch). */
  constructor(backend, req, { bytes = false, signal } = {}, closer) {
    this.#backend = backend;
    this.#req = req;
    this.#bytes = bytes;
    this.#next = req.startRevision ?? 0;
    const ctl = new AbortController();
    const link = linkSignals([signal, closer]);
    const onAbort = () => ctl.abort(link.signal.reason);
    if (link.signal.aborted) onAbort();
    else link.signal.addEventListener("abort", onAbort, { once: true });
    this.#stop = ctl;
    this.#dispose = () => {
      link.signal.removeEventListener("abort", onAbort);
      link.dispose();
    };
    this.#ready = this.#open();
    this.#ready.catch(() => {}); // reported by next() too; unhandled only if nobody asks
    this.#gen = this.#run();
  }

  /**
   * Resolves with the revision the watch was created at once the server has
   * it (changes after that revision are delivered), or rejects if it could
   * not be created (Unimplemented, InvalidArgument...). A compacted start is
   * reported by the iteration: etcd answers `created` first, then cancels.
   */
  get ready() {
    return this.#ready;
  }

  /** The revision the next stream would start from (after a drop). */
  get resumeRevision() {
    return this.#next;
  }

  #error() {
    const reason = this.#stop.signal.reason;
    if (reason instanceof LeaseError) return reason;
    return reason === undefined ? closed() : aborted(this.#stop.signal);
  }

  /** Opens a stream (retrying while the server is away) and reads its `created` answer. */
  async #open() {
    let delay = RETRY_MIN_MS;
    for (;;) {
      if (this.#stop.signal.aborted) throw this.#error();
      const it = this.#backend.watch({ ...this.#req, startRevision: this.#next }, { signal: this.#stop.signal })[
        Symbol.asyncIterator
      ]();
      try {
        const first = await it.next();
        // Ended meanwhile (return() before the first next(), an abort):
        // the stream is let go here, as nothing else holds it.
        if (this.#stop.signal.aborted) throw this.#error();
        if (!first.done) {
          const m = first.value;
          if (m.canceled) throw this.#canceled(m);
          if (this.#next === 0) this.#next = m.revision + 1;
          this.#stream = it;
          return m.revision;
        }
      } catch (e) {
        it.return?.().catch(() => {});
        if (this.#stop.signal.aborted) throw this.#error();
        if (!retryable(e)) throw e;
      }
      try {
        await sleep(delay, this.#stop.signal);
      } catch {
        throw this.#error();
      }
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  #canceled(m) {
    if (m.compactRevision) return compacted(m.compactRevision);
    return new LeaseError("Internal", `the server canceled the watch${m.cancelReason ? `: ${m.cancelReason}` : ""}`);
  }

  async *#run() {
    try {
      yield* this.#events();
    } catch (e) {
      if (!this.#returned) throw e;
    } finally {
      this.#close();
    }
  }

  async *#events() {
    await this.#ready;
    for (;;) {
      if (this.#stream === null) await this.#open();
      let r;
      try {
        r = await this.#stream.next();
      } catch (e) {
        if (this.#stop.signal.aborted) throw this.#error();
        if (!retryable(e)) throw e;
        this.#stream = null; // dropped: resume
        continue;
      }
      if (r.done) {
        if (this.#stop.signal.aborted) throw this.#error();
        this.#stream = null;
        continue;
      }
      const m = r.value;
      if (m.canceled) throw this.#canceled(m);
      if (m.events.length === 0) {
        // A progress notification: everything up to its revision was
        // sent. (Not `created`, whose revision can be ahead of the
        // history still to come.)
        if (!m.created && m.revision >= this.#next) this.#next = m.revision + 1;
        continue;
      }
      // A response holds whole revisions; resume after its last one.
      this.#next = m.events[m.events.length - 1].kv.modRevision + 1;
      for (const e of m.events) {
        if (this.#stop.signal.aborted) throw this.#error();
        yield eventOut(e, this.#bytes);
      }
    }
  }

  #close() {
    if (!this.#stop.signal.aborted) this.#stop.abort(closed());
    this.#stream?.return?.().catch(() => {});
    this.#stream = null;
    this.#dispose();
  }

  next() {
    return this.#gen.next();
  }

  /** Ends the watch (`break` in a for await calls it); a next() waiting meanwhile resolves done. */
  async return(value) {
    this.#returned = true;
    this.#close();
    await this.#gen.return(value);
    return { value, done: true };
  }

  async throw(e) {
    this.#close();
    return this.#gen.throw(e);
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** The same as return(): for `using`-style cleanup. */
  async [Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose")]() {
    await this.return();
  }
}
