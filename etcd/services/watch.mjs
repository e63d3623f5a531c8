// etcdserverpb.Watch: one session per stream, many watchers per session,
// each an engine watcher (lessor.watch). Responses are sequenced as etcd
// 3.4's serverWatchStream does (etcdserver/api/v3rpc/watch.go): `created`
// before any event of a watcher, a start before the compaction point as
// `created` then a separate cancel with `compact_revision` (header revision
// 0), invalid ranges and duplicate ids as created+canceled with watch_id -1,
// progress requests answered with watch_id -1, progress notifications for
// watchers that asked (etcd's interval plus up to 10% jitter, skipped after
// events), fragments past etcd's 2 MiB send size when asked.
//
// The transport side: `Watch.open(send, call)` starts a session (the
// caller's token in `call.token`, checked at each create); `send(msg)`
// returns false when the transport wants it to wait, `call.room()`
// (optional) says how many bytes it can take before it would (0: wait), and
// the transport calls `drain()` once it can take more. A session that has to
// wait stops its engine watchers and restarts them from where they were
// once drained (the history in between is read back from the engine); a
// batch of events is sent only as far as the room goes, in whole revisions
// (one at least), the rest read back later. So a slow client costs a
// bounded buffer, and, as etcd's slow watchers do, its watchers catch up
// from history, or are cancelled with the compaction that passes them
// while it lags.
import { encodedSize, lengthSize } from "../size.mjs";
import { GRPC_OVERHEAD_BYTES, MAX_REQUEST_BYTES } from "../limits.mjs";
import { bytesOf, int, kvOut } from "./common.mjs";
import { watchRefusal } from "../auth/permissions.mjs";

// etcd's --max-request-bytes plus gRPC overhead: where fragments are cut.
const FRAGMENT_BYTES = MAX_REQUEST_BYTES + GRPC_OVERHEAD_BYTES;
const WATCH_RESPONSE = "etcdserverpb.WatchResponse";
// The next turn of the event loop: setImmediate where there is one (Node,
// Bun, Deno); workerd has none without nodejs_compat.
const nextTurn = (fn) => (typeof setImmediate === "function" ? setImmediate(fn) : setTimeout(fn, 0));
const EVENT = "mvccpb.Event";
// etcd's --experimental-watch-progress-notify-interval default, and its minimum.
export const PROGRESS_INTERVAL_MS = 10 * 60 * 1000;
export const MIN_PROGRESS_INTERVAL_MS = 100;
// Events one stream hands over in one turn of the event loop before its
// watchers pause until the next: a watcher catching up on a long history
// was replayed whole in one go (etcdctl watch --rev=2 over 400k revisions:
// ranges meanwhile waited up to 589 ms; at 10k a turn 117-134 ms, at 2k
// 56-64 ms, the rest being the 2 cores shared with the client decoding).
export const TURN_EVENTS = 2_000;

// About what an event takes on the wire (for the transport's room; its
// key and values are most of it).
const len = (x) => x?.length ?? 0;
const eventBytes = (e) => 48 + len(e.kv.key) + len(e.kv.value) + (e.prevKv ? 48 + len(e.prevKv.key) + len(e.prevKv.value) : 0);

const cmp = (a, b) => {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
};

// The wire form of an engine event, made once: the lessor hands one object
// to every watcher of a change, and so does this (the transports encode it
// once too).
const wire = new WeakMap();
const eventOut = (e) => {
  let ev = wire.get(e);
  if (ev === undefined) {
    ev = { type: e.type === "put" ? "PUT" : "DELETE", kv: kvOut(e.kv) };
    if (e.prevKv) ev.prev_kv = kvOut(e.prevKv);
    wire.set(e, ev);
  }
  return ev;
};

/** etcd's sendFragments: events split so each response stays under the limit. */
function fragments(resp, limit = FRAGMENT_BYTES) {
  const events = resp.events;
  const sizes = events.map((e) => {
    const n = encodedSize(EVENT, e);
    return 1 + lengthSize(n) + n; // field 11, length, the event
  });
  const whole = encodedSize(WATCH_RESPONSE, { ...resp, events: [] }) + sizes.reduce((a, b) => a + b, 0);
  if (whole < limit || events.length < 2) return [resp];
  const base = encodedSize(WATCH_RESPONSE, { ...resp, events: [], fragment: true });
  const out = [];
  let i = 0;
  for (;;) {
    const cur = [];
    let size = base;
    while (i < events.length) {
      cur.push(events[i]);
      size += sizes[i];
      if (cur.length > 1 && size >= limit) {
        cur.pop();
        break;
      }
      i++;
    }
    const done = i === events.length;
    out.push({ ...resp, events: cur, fragment: !done });
    if (done) return out;
  }
}

// A response being made ready in steps (#prepare) in its place in the
// outbox: `msgs` once it is.
class Preparing {
  msgs = null;
}

class Session {
  #lessor;
  #stats;
  #header;
  #send;
  #room;
  #interval;
  #fragmentBytes;
  // watch id -> { req, start, next, prevKv, fragment, progress, w, compacted }
  #watchers = new Map();
  #nextId = 0;
  // Waiting for the transport to drain, or for the outbox to go out.
  #waitTransport = false;
  #waitOutbox = false;
  // Events handed over this turn, and whether the watchers pause until the
  // next (TURN_EVENTS).
  #turnEvents = 0;
  #pausedForTurn = false;
  #closed = false;
  #timer = null;
  #outbox = []; // [message or Preparing, about its size]
  #outboxBytes = 0;
  #flushing = false;
  // Outbox entries the store's flushes have released (sent once ready).
  #released = 0;
  // The transport's own preparation of events for the wire (optional).
  #prepareWire;
  // The caller's auth for each create: etcd's cancel reason, or null.
  #refusal;

  constructor({ lessor, header, progressIntervalMs, fragmentBytes, stats }, send, refusal, room = null, prepare = null) {
    this.#prepareWire = prepare;
    this.#refusal = refusal;
    this.#lessor = lessor;
    this.#fragmentBytes = fragmentBytes;
    this.#stats = stats;
    stats.sessions.add(this);
    this.#header = header;
    this.#send = send;
    this.#room = room;
    this.#interval = progressIntervalMs;
  }

  get #blocked() {
    return this.#waitTransport || this.#waitOutbox;
  }

  // Messages go out in order, each once the writes it may report are
  // durable: while the store syncs they wait in the outbox, and each flush
  // releases those queued before it was asked for.
  #out(msg, size = 0) {
    if (this.#closed) return;
    if (this.#outbox.length === 0 && this.#lessor.pendingWrites === 0) return this.#emit(msg);
    this.#outbox.push([msg, size]);
    this.#outboxBytes += size;
    if (!this.#flushing) this.#flush();
  }

  #flush() {
    this.#flushing = true;
    const n = this.#outbox.length - this.#released;
    this.#lessor.flush().then(
      () => {
        this.#flushing = false;
        this.#released += n;
        this.#sendReleased();
      },
      // The store failed: the server refuses everything now; this stream
      // sends nothing more it could not stand behind.
      () => this.close(),
    );
  }

  // Sends what the flushes released, in order, up to a response still
  // being made ready (which calls this again once it is).
  #sendReleased() {
    while (this.#released > 0 && !this.#closed) {
      const [msg, size] = this.#outbox[0];
      if (msg instanceof Preparing && msg.msgs === null) return;
      this.#outbox.shift();
      this.#released--;
      this.#outboxBytes -= size;
      if (msg instanceof Preparing) for (const m of msg.msgs) this.#emit(m);
      else this.#emit(msg);
    }
    if (this.#closed) return;
    if (this.#outbox.length > 0) {
      if (!this.#flushing) this.#flush();
    } else if (this.#waitOutbox) {
      // What waited for it is out: the watchers go on if the transport has room.
      this.#waitOutbox = false;
      if (!this.#blocked && !this.#pausedForTurn) this.#restart();
    }
  }

  #emit(msg) {
    if (this.#closed) return;
    if (this.#send(msg) === false && !this.#waitTransport) this.#block();
  }

  #head(revision) {
    const h = this.#header();
    return revision === undefined ? h : { ...h, revision };
  }

  /**
   * The id the next watcher created with id 0 gets, unless in use (etcd's
   * nextID: ids a stream has used are not handed out again). Set by a host
   * that resumes a stream (worker/sockets.mjs), after re-creating its
   * watchers.
   */
  get nextId() {
    return this.#nextId;
  }
  set nextId(n) {
    this.#nextId = n;
  }

  /**
   * A request of the stream. `resumed`: a create a host makes again for a
   * watcher it already had (worker/sockets.mjs), which was checked then.
   */
  request(req, { resumed = false } = {}) {
    if (this.#closed) return;
    if (req.create_request) this.#create(req.create_request, resumed);
    else if (req.cancel_request) this.#cancel(int(req.cancel_request.watch_id));
    else if (req.progress_request) this.#out({ header: this.#head(), watch_id: -1 });
    // Anything else is ignored, as etcd does.
  }

  #create(creq, resumed) {
    let key = bytesOf(creq.key);
    if (key.length === 0) key = Uint8Array.of(0); // \0 is the smallest key
    const end = bytesOf(creq.range_end);
    const fromKey = end.length === 1 && end[0] === 0;
    const refuse = (reason) => this.#out({ header: this.#head(), watch_id: -1, created: true, canceled: true, cancel_reason: reason });
    // The caller's read of the range comes first, as in etcd's recvLoop.
    const refused = resumed ? null : this.#refusal(creq);
    if (refused) return refuse(refused);
    if (end.length && !fromKey && cmp(key, end) >= 0) return refuse("mvcc: watcher range is empty");
    let id = int(creq.watch_id);
    if (id === 0) {
      while (this.#watchers.has(this.#nextId)) this.#nextId++;
      id = this.#nextId++;
    } else if (this.#watchers.has(id)) {
      return refuse("mvcc: duplicate watch ID provided on the WatchStream");
    }
    const current = this.#lessor.revision;
    const filters = new Set((creq.filters ?? []).map(String));
    const st = {
      req: {
        key,
        rangeEnd: end.length ? end : undefined,
        prevKv: Boolean(creq.prev_kv),
        noPut: filters.has("NOPUT") || filters.has("0"),
        noDelete: filters.has("NODELETE") || filters.has("1"),
      },
      next: int(creq.start_revision) || current + 1,
      fragment: Boolean(creq.fragment),
      // progress_notify: true while nothing was sent since the last tick.
      progress: creq.progress_notify ? true : undefined,
      w: null,
      compacted: false,
    };
    this.#watchers.set(id, st);
    this.#out({ header: this.#head(current), watch_id: id, created: true });
    if (st.next < 0) {
      // etcd compares a negative start with its compaction point (-1 until
      // the first compaction). Below it: the compacted answer, which etcd
      // marks canceled only when that point is not 0, and the watcher is
      // gone. Else (-1 before any compaction) it reads nothing before and
      // follows from now on.
      const at = this.#lessor.compactRevision;
      if (st.next < at) {
        st.compacted = true;
        this.#out({ header: this.#head(0), watch_id: id, canceled: at !== 0, compact_revision: at });
        return;
      }
      st.next = current + 1;
    }
    if (st.progress !== undefined) this.#startTimer();
    if (!this.#blocked && !this.#pausedForTurn) this.#start(id, st);
  }

  #start(id, st) {
    st.w = this.#lessor.watch({ ...st.req, startRevision: st.next }, (b) => this.#batch(id, st, b));
  }

  #batch(id, st, b) {
    if (this.#closed || this.#watchers.get(id) !== st || !st.w) return;
    if (b.compactRevision !== 0) {
      st.w = null;
      st.compacted = true;
      // etcd keeps the id taken until the client cancels it.
      this.#out({ header: this.#head(0), watch_id: id, canceled: true, compact_revision: b.compactRevision });
      return;
    }
    const events = b.events;
    if (events.length === 0) return;
    if (!this.#room) return this.#sendEvents(id, st, b.revision, events, 0);
    // Whole revisions, as far as the transport's room goes (one at least
    // while it has any); the rest is read back from history once it drains.
    for (let i = 0; i < events.length; ) {
      const room = this.#room();
      if (room <= 0) return this.#block(); // (room() said wait: a drain follows)
      if (room <= this.#outboxBytes) return this.#waitForOutbox();
      let j = i;
      let size = 0;
      while (j < events.length) {
        const rev = events[j].kv.modRevision;
        let k = j;
        let s = 0;
        while (k < events.length && events[k].kv.modRevision === rev) s += eventBytes(events[k++]);
        if (j > i && this.#outboxBytes + size + s > room) break;
        size += s;
        j = k;
      }
      this.#sendEvents(id, st, b.revision, j - i === events.length ? events : events.slice(i, j), size);
      i = j;
      if (this.#blocked || this.#closed || st.w === null) return;
    }
  }

  // Sends `events` of watcher `id` (whole revisions, in order) as one
  // response, or etcd's fragments of it.
  #sendEvents(id, st, revision, events, size) {
    this.#stats.events += events.length;
    st.next = events[events.length - 1].kv.modRevision + 1;
    if (st.progress !== undefined) st.progress = false;
    if (events.length > TURN_EVENTS) this.#prepare(id, st, revision, events, size);
    else {
      const resp = { header: this.#head(revision), watch_id: id, events: events.map(eventOut) };
      if (!st.fragment) this.#out(resp, size);
      else for (const r of fragments(resp, this.#fragmentBytes)) this.#out(r, size);
    }
    if (this.#turnEvents === 0) nextTurn(() => (this.#turnEvents = 0));
    this.#turnEvents += events.length;
    if (this.#turnEvents >= TURN_EVENTS && !this.#pausedForTurn) this.#pauseForTurn();
  }

  // A response of many events (a revoke of a lease with many keys): made
  // ready for the wire TURN_EVENTS events a turn (while the store's fsync
  // is awaited, mostly), in its place in the outbox, so that making it
  // holds no turn for all of it. Still one response (or etcd's fragments),
  // sent once durable.
  #prepare(id, st, revision, events, size) {
    const p = new Preparing();
    const head = this.#head(revision);
    const wire = new Array(events.length);
    let i = 0;
    const step = () => {
      if (this.#closed) return;
      const from = i;
      for (const end = Math.min(i + TURN_EVENTS, events.length); i < end; i++) wire[i] = eventOut(events[i]);
      this.#prepareWire?.(wire.slice(from, i));
      if (i < events.length) return void nextTurn(step);
      const resp = { header: head, watch_id: id, events: wire };
      p.msgs = st.fragment ? fragments(resp, this.#fragmentBytes) : [resp];
      this.#sendReleased();
    };
    this.#outbox.push([p, size]);
    this.#outboxBytes += size;
    if (!this.#flushing) this.#flush();
    nextTurn(step);
  }

  // Pauses the engine watchers where they are (a catch-up's search for
  // its next batch included), and resumes them in the next turn (its count
  // starts afresh: #batch), so that others are answered in between.
  #pauseForTurn() {
    this.#pausedForTurn = true;
    for (const st of this.#watchers.values()) st.w?.pause();
    nextTurn(() => {
      this.#pausedForTurn = false;
      this.#restart();
    });
  }

  #restart() {
    if (this.#blocked || this.#closed) return;
    for (const [id, st] of this.#watchers) {
      if (this.#blocked || this.#pausedForTurn) break;
      if (st.w) st.w.resume();
      else if (!st.compacted) this.#start(id, st);
    }
  }

  #cancel(id) {
    const st = this.#watchers.get(id);
    if (!st) return; // etcd answers nothing for an unknown id
    st.w?.cancel();
    st.w = null;
    this.#watchers.delete(id);
    this.#out({ header: this.#head(), watch_id: id, canceled: true });
  }

  // The transport is full, for as long as the client does not read: the
  // engine watchers are cancelled, to be started again from `st.next` once
  // it drains (a paused one would hold the history, and so the quota's
  // compaction, for that long); a compaction that passes them meanwhile
  // ends them, as it does etcd's slow watchers.
  #block() {
    this.#waitTransport = true;
    this.#stopWatchers();
  }

  // What waits for the store's flush fills the transport's room: the
  // watchers stop until it is out (#flush restarts them).
  #waitForOutbox() {
    this.#waitOutbox = true;
    this.#stopWatchers();
  }

  #stopWatchers() {
    for (const st of this.#watchers.values()) {
      st.w?.cancel();
      st.w = null;
    }
  }

  /** The transport can take more: restart the watchers from where they stopped. */
  drain() {
    if (!this.#waitTransport || this.#closed) return;
    this.#waitTransport = false;
    if (!this.#blocked && !this.#pausedForTurn) this.#restart();
  }

  // etcd's progress ticker: one per stream, started with the first watcher
  // that asks for notifications.
  #startTimer() {
    if (this.#timer || this.#closed) return;
    const jitter = Math.floor(Math.random() * (this.#interval / 10));
    this.#timer = setInterval(() => this.#tick(), this.#interval + jitter);
    this.#timer.unref?.();
  }

  #tick() {
    if (this.#closed) return;
    for (const [id, st] of this.#watchers) {
      if (st.progress === undefined) continue;
      // Only a watcher that is caught up (etcd's synced group) reports.
      if (st.progress && st.w?.caughtUp && !this.#blocked) this.#out({ header: this.#head(), watch_id: id });
      st.progress = true;
    }
  }

  /**
   * Its watchers (those a compaction ended are gone, as from etcd's store),
   * and how many of them wait for a slow client to read (etcd's unsynced).
   */
  watcherCounts() {
    let watchers = 0;
    for (const st of this.#watchers.values()) if (!st.compacted) watchers++;
    return { watchers, slow: this.#blocked ? watchers : 0 };
  }

  /** The client half-closed: etcd goes on sending. */
  end() {}

  /** The stream is gone. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#stats.sessions.delete(this);
    clearInterval(this.#timer);
    for (const st of this.#watchers.values()) st.w?.cancel();
    this.#watchers.clear();
  }
}

/**
 * `stats.watch` (services/metrics.mjs createServiceStats), which /metrics
 * reads: the open sessions, and the events handed to their watchers.
 */
export function watchService({ lessor, header, auth, progressIntervalMs = PROGRESS_INTERVAL_MS, maxRequestBytes = MAX_REQUEST_BYTES, stats }) {
  const ctx = { lessor, header, progressIntervalMs: Math.max(MIN_PROGRESS_INTERVAL_MS, progressIntervalMs), fragmentBytes: maxRequestBytes + GRPC_OVERHEAD_BYTES, stats: stats.watch };
  return {
    Watch: {
      // `call.token`: the stream's token, read at each create (etcd/methods.mjs);
      // `call.room()`: the bytes the transport can take now (optional).
      // `call.prepare(events)`: the transport's own work on events before they are sent (optional).
      open: (send, call) => new Session(ctx, send, (creq) => watchRefusal(auth, call?.token, creq), call?.room ?? null, call?.prepare ?? null),
    },
  };
}
