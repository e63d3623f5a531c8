// HTTP/2 for the gRPC transport: a socket's bytes go through the h2 wasm
// module (crates/h2/, Rust's h2 crate), which answers with bytes to write and
// events for the calls on it. One module instance serves every connection.
// grpc.mjs turns the calls into service calls.
import { readFileSync } from "node:fs";
import { randomFillSync } from "node:crypto";
import { readBytes } from "./reads.mjs";

const WASM = new URL("../dist/h2.wasm", import.meta.url);

// Input work one connection may do in a turn of the event loop before its
// reads wait for the next: libuv hands a socket up to 32 reads of 64 KiB
// at once, and a client sending bytes that are cheap to send and dear to
// parse kept everyone else waiting for all of them (up to ~0.7 s).
const TURN_INPUT_MS = 5;
// A read is handed to the module in slices, the time checked after each:
// one 64 KiB read of header blocks that are dear to decode took ~75 ms in
// one go. A connection's slice halves while its slices are slow and
// doubles while they are fast, between these bounds (bytes), so cheap input
// goes in whole reads. What is left once the turn's input time is spent
// waits, copied out of the shared read buffer, for the next turn.
const MIN_SLICE = 512;
const MAX_SLICE = 64 * 1024;
const SLOW_SLICE_MS = 1;
// Input work all connections together do in a turn before those whose
// input is dear (DEAR_MS in this turn and the last) wait for the next: 8
// connections of HPACK bombs, 5 ms each, held a cheap client's call 67 ms
// (the median) in every turn. Cheap input goes on at once. (At 10 ms a
// victim's Range under benches/attack-memory's HPACK attack took 22 ms,
// the median, and up to 60; at 5, 13-14 and up to 43.)
const TURN_SHARED_MS = 5;
const DEAR_MS = 1;
const turn = { n: 0, spent: 0 };
// Microtasks through a settled promise: Node's queueMicrotask makes an
// AsyncResource for each, a cost on every call (~1.5% of the main thread).
export const resolved = Promise.resolve();

function spend(ms) {
  if (turn.spent === 0) {
    setImmediate(() => {
      turn.n++;
      turn.spent = 0;
    });
  }
  turn.spent += ms;
}

const EV_CALL = 1, EV_MESSAGE = 2, EV_END = 3, EV_CANCEL = 4, EV_TOO_LARGE = 5, EV_DRAIN = 6, EV_CLOSED = 7;

// What h2_send_part says became of a message (crates/h2's Sent): past SENT the
// module's call is blocked (its requests wait too) until a Drain event;
// KEPT: the module did not take it.
const GONE = 0, SENT = 1, FULL = 2, OVER = 3, KEPT = 4;
// A call's sender waits once this many of its messages, or this many bytes
// of its connection's, wait for the client: etcd's watch stream buffers 128
// responses. The module holds 1 MiB of a connection's (its MODULE_BYTES);
// the rest wait here, in memory that is given back once they go (the
// module's never shrinks).
const HIGH_WATER_MESSAGES = 128;
const HIGH_WATER_BYTES = 16 * 2 ** 20;
// A message longer than this goes to the module in parts of it, as the
// module drains (a catch-up's one response can be many MiB).
const PART = 256 * 1024;
// h2_send_part's "the next part of the message".
const NEXT_PART = 0xffffffff;

let compiled = null;
let current = null;
let failures = 0;

// What the module may hold before the connection holding most of it is
// closed (GOAWAY ENHANCE_YOUR_CALM), so that memory running out fails that
// connection, not the module and every connection on it. Each connection's
// own bounds keep it far below this (server/README.md); many together may
// not. wasm32's memory ends at 4 GiB, and the allocator needs room past
// what it holds.
let memoryHigh = 2 ** 31;
let guarding = false;
// The same for the messages connections keep outside the module: each holds
// at most HIGH_WATER_BYTES and a message, and many together at most this.
let keptHigh = 2 ** 31;
let kept = 0;

/** Sets the memory guard's bounds, in bytes (tests lower them). */
export function setH2MemoryHigh(bytes, keptBytes = keptHigh) {
  memoryHigh = bytes;
  keptHigh = keptBytes;
}

const MiB = (n) => (n / 2 ** 20).toFixed(1);

// Closes the connections holding most, while the module holds more than
// memoryHigh or the connections keep more than keptHigh outside it (each
// close frees its buffers at once).
function guard(inst) {
  if (guarding || inst.failed || !inst.x.h2_live_bytes) return;
  guarding = true;
  try {
    const live = () => inst.x.h2_live_bytes() >>> 0;
    for (let module = live(); module > memoryHigh || kept > keptHigh; module = live()) {
      const inModule = module > memoryHigh;
      let worst = null;
      let most = 0;
      for (const s of inst.sessions) {
        const held = inModule ? s.held() : s.kept;
        if (held > most) [worst, most] = [s, held];
      }
      if (!worst) return;
      const what = inModule ? `the HTTP/2 module holds ${MiB(module)} MiB, past ${MiB(memoryHigh)}` : `HTTP/2 connections keep ${MiB(kept)} MiB of answers, past ${MiB(keptHigh)}`;
      console.error(`edge-lease: ${what}: closing the connection that holds most (${MiB(most)} MiB)`);
      worst.calm();
    }
  } catch (e) {
    fail(inst, e);
  } finally {
    guarding = false;
  }
}

// The module's few WASI imports: a clock (h2 times reset streams), random
// bytes (std's hash seeds), stderr for a panic's message. No files, no
// environment. Addresses and lengths come as wasm's i32, signed: each is read
// `>>> 0`, or one past 2 GiB would be negative. (Exported for tests.)
export function wasi(memory) {
  const view = () => new DataView(memory().buffer);
  return {
    clock_time_get(id, _precision, out) {
      const ns = id === 0 ? BigInt(Date.now()) * 1_000_000n : process.hrtime.bigint();
      view().setBigUint64(out >>> 0, ns, true);
      return 0;
    },
    random_get(ptr, len) {
      randomFillSync(new Uint8Array(memory().buffer, ptr >>> 0, len >>> 0));
      return 0;
    },
    environ_sizes_get(count, size) {
      view().setUint32(count >>> 0, 0, true);
      view().setUint32(size >>> 0, 0, true);
      return 0;
    },
    environ_get: () => 0,
    fd_write(fd, iovs, n, written) {
      const v = view();
      let total = 0;
      for (let i = 0; i < n >>> 0; i++) {
        const ptr = v.getUint32((iovs >>> 0) + 8 * i, true);
        const len = v.getUint32((iovs >>> 0) + 8 * i + 4, true);
        if (fd === 1 || fd === 2) process.stderr.write(Buffer.from(new Uint8Array(memory().buffer, ptr, len)));
        total += len;
      }
      v.setUint32(written >>> 0, total, true);
      return 0;
    },
    proc_exit(code) {
      throw new Error(`h2 module exited with ${code}`);
    },
  };
}

// The shared instance, made anew if the last one failed (a trap leaves
// Rust's state unknown, so every connection on it is closed).
function instance() {
  if (current && !current.failed) return current;
  compiled ??= new WebAssembly.Module(readFileSync(WASM));
  let memory = null;
  const { exports } = new WebAssembly.Instance(compiled, { wasi_snapshot_preview1: wasi(() => memory) });
  memory = exports.memory;
  current = { x: exports, memory, sessions: new Set(), failed: false };
  return current;
}

function fail(inst, e) {
  if (inst.failed) return;
  inst.failed = true;
  failures++;
  console.error(`edge-lease: HTTP/2 module failed, closing its ${inst.sessions.size} connections: ${e?.stack ?? e}`);
  for (const s of inst.sessions) s.destroy();
}

/**
 * The shared module's state (tests read it): `memory`, its linear memory's
 * size in bytes (wasm memory grows and never shrinks); `live`, the bytes
 * its allocator has handed out and not had back (null where the build does
 * not count them); `connections`; `kept`, the bytes of answers connections
 * keep outside it for their clients; `failures`, instances that trapped.
 */
export function h2Stats() {
  const ok = current && !current.failed;
  return {
    memory: current?.memory.buffer.byteLength ?? 0,
    live: ok && current.x.h2_live_bytes ? current.x.h2_live_bytes() >>> 0 : null,
    connections: ok ? current.sessions.size : 0,
    kept,
    failures,
  };
}

const encoder = new TextEncoder();

// The bytes of kept parts [from, to).
const bytesOf = (kept, from, to) => {
  let n = 0;
  for (let i = from; i < to; i++) n += kept[i][2];
  return n;
};

// Copies bytes [from, from + len) of message `msg` into the module's
// scratch buffer; returns len. A message is bytes, or an object that has a
// `length` and copies a range of itself (`copy(into, from)` fills `into`):
// grpc.mjs's WatchResponse made of its events' shared encodings, which a
// response many watchers get (and the answers kept for each) never joins.
function partToScratch(x, mem, msg, from, len) {
  const ptr = x.h2_scratch(len) >>> 0;
  const into = new Uint8Array(mem.buffer, ptr, len);
  if (!(msg instanceof Uint8Array)) msg.copy(into, from);
  else into.set(len === msg.length ? msg : msg.subarray(from, from + len));
  return len;
}

// Copies `bytes` into the module's scratch buffer; returns their length.
// (Pointers the module returns are i32, signed in JS: `>>> 0` makes one past
// 2 GiB the address it is.)
export function toScratch(x, mem, bytes) {
  return partToScratch(x, mem, bytes, 0, bytes.length);
}

// Writes `text` as UTF-8 into the scratch buffer; returns its length in bytes.
export function textToScratch(x, mem, text) {
  const ptr = x.h2_scratch(text.length * 3) >>> 0;
  return encoder.encodeInto(text, new Uint8Array(mem.buffer, ptr, text.length * 3)).written;
}

/**
 * What the module produced for connection `h` since the last take: its
 * events and the bytes to write, copied (the module reuses its buffers, and
 * the events' messages are decoded into objects that may keep slices of
 * them), each null if none; `more` if it has more to write (it writes at
 * most 1 MiB between takes). (Exported for tests.)
 */
export function taken(x, mem, h) {
  // (The take first: it may grow the module's memory, detaching an older buffer.)
  const ptr = x.h2_take(h) >>> 0;
  const at = new Uint32Array(mem.buffer, ptr, 5);
  return {
    events: at[1] ? Buffer.from(new Uint8Array(mem.buffer, at[0], at[1])) : null,
    output: at[3] ? Buffer.from(new Uint8Array(mem.buffer, at[2], at[3])) : null,
    more: at[4] === 1,
  };
}

/**
 * A connection's input read but not yet handed to the module, in one
 * buffer it keeps (a copy of each read it held back, made anew, left the
 * process's heap ~30 MiB bigger after an HPACK-bomb attack).
 */
class Backlog {
  #buf = null;
  #start = 0;
  #end = 0;

  get size() {
    return this.#end - this.#start;
  }

  /** Holds `bytes` from `at` on: the bytes of a read, or of `take()`'s view. */
  hold(bytes, at) {
    if (this.#buf && bytes.buffer === this.#buf.buffer && this.size === 0) {
      // What take() handed out, given back: where it is.
      this.#start = bytes.byteOffset - this.#buf.byteOffset + at;
      this.#end = bytes.byteOffset - this.#buf.byteOffset + bytes.length;
      return;
    }
    this.push(bytes.subarray(at));
  }

  /** Adds `bytes` after what it holds. */
  push(bytes) {
    const size = this.size;
    if (!this.#buf || this.#buf.length < size + bytes.length) {
      const next = Buffer.allocUnsafe(Math.max(64 * 1024, 2 ** Math.ceil(Math.log2(size + bytes.length))));
      if (size > 0) this.#buf.copy(next, 0, this.#start, this.#end);
      this.#buf = next;
    } else if (this.#end + bytes.length > this.#buf.length) {
      this.#buf.copyWithin(0, this.#start, this.#end);
    } else {
      bytes.copy(this.#buf, this.#end);
      this.#end += bytes.length;
      return;
    }
    [this.#start, this.#end] = [0, size];
    bytes.copy(this.#buf, this.#end);
    this.#end += bytes.length;
  }

  /** What it holds, as a view, and it is empty (hold() takes the rest back). */
  take() {
    const view = this.#buf.subarray(this.#start, this.#end);
    this.#start = this.#end = 0;
    return view;
  }
}

/** A gRPC call as the h2 module reports it. grpc.mjs sets the on* hooks. */
export class H2Call {
  constructor(session, id, path, timeoutMs, encoding, clientVersion, token) {
    this.session = session;
    this.id = id;
    this.path = path;
    /** grpc-timeout in ms, or -1. */
    this.timeoutMs = timeoutMs;
    /** grpc-encoding ("identity" if none). */
    this.encoding = encoding;
    /** The client-api-version header (etcd's Go client sends it), or null. */
    this.clientVersion = clientVersion;
    /** etcd's auth token (metadata `token`, else `authorization`), or undefined. */
    this.token = token;
    this.done = false;
    this.onMessage = null; // (bytes: Buffer, compressed: boolean)
    this.onEnd = null; // the client half-closed
    this.onCancel = null; // reset by the client, or its connection went
    this.onDrain = null; // send() said wait, and now it need not
    this.onTooLarge = null; // (length) a request message over the limit
    /**
     * The method's counts for /metrics (services/metrics.mjs), set by
     * grpc.mjs once the call's handler starts (etcd counts no call refused
     * before): messages sent, their bytes, and the code it ends with are
     * counted here.
     */
    this.counts = null;
    // Messages the module may not hold yet (it said FULL or OVER): they go
    // to it at its Drain, in order, and so does the call's end (`last`).
    this.kept = null;
    this.last = null;
    // send() said wait: onDrain is owed once the kept messages went.
    this.told = false;
  }

  /**
   * Queues a response message (bytes, or a message that copies itself:
   * partToScratch); false if the caller should wait for onDrain.
   */
  send(bytes) {
    if (this.done) return false;
    this.#sent(bytes);
    return this.#queue(bytes);
  }

  /**
   * Bytes the call may queue before send() would say wait; 0: wait now,
   * onDrain follows (as after send() said false).
   */
  room() {
    if (this.done || this.told) return 0;
    const s = this.session;
    if (this.kept) {
      const room = HIGH_WATER_BYTES - s.kept - s.command((x) => x.h2_waiting(s.handle) >>> 0, HIGH_WATER_BYTES);
      if (room > 0) return room;
      // (A call with messages kept is blocked in the module: a Drain follows.)
      this.told = true;
      return 0;
    }
    // The module's room is HIGH_WATER_BYTES less what it holds; 0: it
    // blocked the call, and says Drain later.
    const module = s.command((x) => x.h2_room(s.handle, this.id) >>> 0, 0);
    if (module === 0) {
      this.told = true;
      return 0;
    }
    // (Other calls keeping the connection's bytes: one message, then wait.)
    return Math.max(1, module - s.kept);
  }

  /** Answers with one message and status OK (a unary call's answer). */
  reply(bytes) {
    if (!this.#end(0)) return;
    this.#sent(bytes);
    if (this.kept || bytes.length > PART) {
      this.#queue(bytes);
      return this.#last((x) => x.h2_finish(this.session.handle, this.id, 0, 0));
    }
    this.session.command((x, mem) => x.h2_reply(this.session.handle, this.id, partToScratch(x, mem, bytes, 0, bytes.length)));
  }

  /** Ends the call with a gRPC status once what it queued is sent. */
  finish(code, message = "") {
    if (!this.#end(code)) return;
    this.#last((x, mem) => x.h2_finish(this.session.handle, this.id, code, textToScratch(x, mem, message)));
  }

  // The call's end goes to the module after its kept messages.
  #last(fn) {
    if (this.kept) this.last = fn;
    else this.session.command(fn);
  }

  // Gives the module message `msg`, in parts if long, as far as it takes
  // them; keeps the rest, as [msg, from, length, the message's length or
  // NEXT_PART]. False if the sender should wait for onDrain.
  #queue(msg) {
    const n = msg.length;
    let at = 0;
    if (!this.kept) {
      let given = false; // all of it went to the module
      while (!given) {
        const len = Math.min(PART, n - at);
        const sent = this.#give(msg, at, len, at === 0 ? n : NEXT_PART);
        if (sent === GONE) return false;
        if (sent !== KEPT) at += len;
        given = sent !== KEPT && at >= n;
        if (sent === SENT) continue;
        this.#holding([]);
        if (sent === FULL) this.told = true;
        break;
      }
      if (given) return !this.told;
    }
    // (A message of no bytes is one part too.)
    do {
      const len = Math.min(PART, n - at);
      this.kept.push([msg, at, len, at === 0 ? n : NEXT_PART]);
      this.session.keep(len);
      at += PART;
    } while (at < n);
    if (this.kept.length >= HIGH_WATER_MESSAGES || this.session.kept >= HIGH_WATER_BYTES) this.told = true;
    return !this.told;
  }

  #give(msg, from, len, message) {
    return this.session.command((x, mem) => x.h2_send_part(this.session.handle, this.id, partToScratch(x, mem, msg, from, len), message), GONE);
  }

  // Starts (a list) or ends (null) keeping messages outside the module.
  #holding(kept) {
    this.kept = kept;
    if (kept) this.session.keeping.set(this.id, this);
    else this.session.keeping.delete(this.id);
  }

  /**
   * The module's Drain: the kept messages go to it until it says wait
   * again; once none is left, the call's end or the sender's onDrain.
   */
  drained() {
    const kept = this.kept;
    if (kept) {
      let at = 0;
      let sent = SENT;
      while (at < kept.length && sent === SENT) {
        sent = this.#give(...kept[at]);
        if (sent !== KEPT) at++;
      }
      if (sent === GONE) return this.drop();
      this.session.keep(-bytesOf(kept, 0, at));
      // Blocked again: the next Drain goes on from here.
      if (sent !== SENT) return void (this.kept = kept.slice(at));
      this.#holding(null);
      const last = this.last;
      this.last = null;
      if (last) return void this.session.command(last);
    }
    if (this.done) return;
    this.told = false;
    this.onDrain?.();
  }

  /** Drops what the call keeps (it, or its connection, is gone). */
  drop() {
    if (!this.kept) return;
    this.session.keep(-bytesOf(this.kept, 0, this.kept.length));
    this.#holding(null);
    this.last = null;
  }

  #sent(bytes) {
    if (!this.counts) return;
    this.counts.sent++;
    this.counts.bytesOut += bytes.length;
  }

  // Marks the call answered with `code`; false if it already was (or was
  // cancelled).
  #end(code) {
    if (this.done) return false;
    this.done = true;
    if (this.counts) this.counts.handled[code]++;
    this.session.forget(this);
    return true;
  }
}

/**
 * One HTTP/2 connection on `socket` (its first bytes the client preface).
 * `onCall(call)` hears each new call; `maxMessage` caps request messages.
 */
export class H2Session {
  constructor(socket, { onCall, maxConcurrentStreams = 0, maxMessage }) {
    this.socket = socket;
    this.onCall = onCall;
    this.calls = new Map();
    this.lastActive = performance.now();
    this.inst = instance();
    this.inst.sessions.add(this);
    this.closed = false;
    this.scheduled = false;
    this.out = []; // bytes to write this turn
    this.full = false; // the socket said to wait for "drain"
    this.more = false; // the module has more to write: taken again next turn
    this.inputMs = 0; // input work since its reads last waited a turn
    this.yielded = false; // its reads wait for the next turn
    this.slice = MIN_SLICE; // bytes handed to the module at once (input)
    this.turn = 0; // the turn it last did input in (turn.n)
    this.turnMs = 0; // its input work in that turn
    this.lastTurnMs = 0; // and in the turn before, if that was the one before
    this.backlog = new Backlog(); // input read but not yet handed to the module
    this.eofHeld = false; // the client's EOF, behind the backlog
    this.keeping = new Map(); // calls keeping messages the module may not hold yet, by id
    this.kept = 0; // their bytes
    this.handle = this.command((x) => x.h2_open(maxConcurrentStreams >>> 0, maxMessage >>> 0), -1);
    if (this.handle < 0) return;
    socket.on("end", () => this.eof());
    socket.on("close", () => this.destroy());
    socket.on("error", () => this.destroy());
    this.reads = readBytes(socket, (bytes) => this.input(bytes));
    this.reads.start();
    this.flush();
  }

  // The client's EOF, after what it sent before it.
  eof() {
    this.eofHeld = this.backlog.size > 0;
    if (!this.eofHeld) this.command((x) => x.h2_eof(this.handle));
  }

  input(chunk) {
    // (Reads are paused while input is held back; a read already under way
    // may still come: it queues behind.)
    if (this.backlog.size > 0) return this.backlog.push(chunk);
    const t0 = performance.now();
    if (this.turn !== turn.n) {
      this.lastTurnMs = this.turn === turn.n - 1 ? this.turnMs : 0;
      [this.turn, this.turnMs] = [turn.n, 0];
    }
    const dear = (spent) => this.lastTurnMs + this.turnMs + spent >= DEAR_MS && turn.spent + spent >= TURN_SHARED_MS;
    let at = 0;
    // (Dear input past the turn's shared budget waits whole.)
    let held = dear(0);
    while (!held && at < chunk.length && !this.closed) {
      const end = Math.min(chunk.length, at + this.slice);
      const slice = chunk.subarray(at, end);
      const s0 = performance.now();
      this.command((x, mem) => x.h2_input(this.handle, toScratch(x, mem, slice)));
      const ms = performance.now() - s0;
      if (ms > SLOW_SLICE_MS) this.slice = Math.max(MIN_SLICE, this.slice >> 1);
      else if (ms < SLOW_SLICE_MS / 4 && slice.length === this.slice) this.slice = Math.min(MAX_SLICE, this.slice << 1);
      at = end;
      const spent = performance.now() - t0;
      held = at < chunk.length && (this.inputMs + spent >= TURN_INPUT_MS || dear(spent));
    }
    if (held) this.backlog.hold(chunk, at);
    // Calls, messages and cancels are heard at once, not a tick later.
    this.flush();
    const spent = performance.now() - t0;
    spend(spent);
    this.turnMs += spent;
    this.inputMs += spent;
    if ((this.inputMs >= TURN_INPUT_MS || this.backlog.size > 0) && !this.yielded && !this.closed) {
      this.yielded = true;
      this.reads.pause();
      setImmediate(() => {
        this.yielded = false;
        this.inputMs = 0;
        if (this.backlog.size > 0 && !this.closed) this.input(this.backlog.take());
        if (this.eofHeld && this.backlog.size === 0 && !this.closed) this.eof();
        // (Closed as well: a connection ended after its GOAWAY is read, and
        // what it sends dropped, until the client goes.)
        if (!this.full && !this.yielded) this.reads.resume();
      });
    }
  }

  /**
   * Runs `fn(exports, memory)` against the module (a trap closes this
   * instance's connections and gives `otherwise`), then has its events
   * handed out before the tick ends (flush(); the bytes go at the turn's
   * end, write()).
   */
  command(fn, otherwise) {
    const inst = this.inst;
    if (this.closed || inst.failed) return otherwise;
    let out;
    try {
      out = fn(inst.x, inst.memory);
    } catch (e) {
      fail(inst, e);
      return otherwise;
    }
    if (!this.scheduled) {
      this.scheduled = true;
      resolved.then(() => this.flush());
    }
    return out;
  }

  /** Writes what the module produced and hands out its events. */
  flush() {
    this.scheduled = false;
    if (this.closed || this.inst.failed) return;
    let events, output, more;
    try {
      ({ events, output, more } = taken(this.inst.x, this.inst.memory, this.handle));
    } catch (e) {
      fail(this.inst, e);
      return;
    }
    if (output) {
      this.out.push(output);
      if (this.out.length === 1) setImmediate(() => this.write());
    }
    if (more && !this.more) {
      // After this is written (setImmediate keeps the order).
      this.more = true;
      setImmediate(() => {
        this.more = false;
        this.flush();
      });
    }
    if (events) this.dispatch(events);
    guard(this.inst);
  }

  /** The bytes this connection's buffers hold in the module. */
  held() {
    return this.closed || this.handle < 0 ? 0 : this.inst.x.h2_held(this.handle) >>> 0;
  }

  /** Counts `n` more bytes kept outside the module (less, if negative). */
  keep(n) {
    this.kept += n;
    kept += n;
  }

  /** GOAWAY ENHANCE_YOUR_CALM, and the end: it holds more than it may. */
  calm() {
    this.command((x) => x.h2_calm(this.handle));
    this.flush();
    // (Ended by the Closed event above; before its handshake, here.)
    this.destroy();
  }

  // One socket write per connection and event-loop turn: the answers to
  // every call read in this turn, with the window updates and acks, go out
  // together (a write to a loopback socket costs more than a call's
  // protocol work).
  write() {
    if (this.scheduled) this.flush();
    const out = this.out;
    this.out = [];
    if (out.length === 0 || this.socket.destroyed) return;
    if (!this.socket.write(out.length === 1 ? out[0] : Buffer.concat(out)) && !this.full) {
      // The client does not read: hold h2 back and stop reading its requests
      // until the socket drains, so nothing piles up here.
      this.full = true;
      this.command((x) => x.h2_socket_full(this.handle, 1));
      this.reads.pause();
      this.socket.once("drain", () => {
        this.full = false;
        this.command((x) => x.h2_socket_full(this.handle, 0));
        if (!this.yielded) this.reads.resume();
      });
    }
  }

  dispatch(buf) {
    for (let at = 0; at < buf.length; ) {
      const kind = buf[at];
      const id = buf.readUInt32LE(at + 1);
      const len = buf.readUInt32LE(at + 5);
      const body = buf.subarray(at + 9, at + 9 + len);
      at += 9 + len;
      if (kind === EV_CLOSED) {
        this.end();
        continue;
      }
      if (kind === EV_CALL) {
        const timeoutMs = body.readDoubleLE(0);
        let p = 9 + body[8];
        const encoding = body.toString("latin1", 9, p);
        const n = body[p++];
        const clientVersion = n === 255 ? null : body.toString("latin1", p, (p += n));
        let token;
        if (body[p++] === 1) {
          const len = body.readUInt32LE(p);
          token = body.toString("latin1", p + 4, (p += 4 + len));
        }
        const path = body.toString("latin1", p);
        const call = new H2Call(this, id, path, timeoutMs, encoding, clientVersion, token);
        this.calls.set(id, call);
        this.lastActive = performance.now();
        this.onCall(call);
        continue;
      }
      // (A call that ended while it kept messages is still theirs.)
      const call = this.calls.get(id) ?? (kind === EV_DRAIN || kind === EV_CANCEL ? this.keeping.get(id) : undefined);
      if (!call) continue;
      if (kind === EV_MESSAGE) call.onMessage?.(body.subarray(1), body[0] !== 0);
      else if (kind === EV_END) call.onEnd?.();
      else if (kind === EV_DRAIN) call.drained();
      else if (kind === EV_TOO_LARGE) call.onTooLarge?.(body.readUInt32LE(0));
      else if (kind === EV_CANCEL) this.cancel(call);
    }
  }

  cancel(call) {
    call.drop();
    if (call.done) return;
    call.done = true;
    if (call.counts) call.counts.handled[call.counts.cancelled]++;
    this.forget(call);
    call.onCancel?.();
  }

  /** A call is over: the connection is idle from now if it was the last. */
  forget(call) {
    this.calls.delete(call.id);
    if (this.calls.size === 0) this.lastActive = performance.now();
  }

  /** GOAWAY: calls in progress finish, then the connection ends. */
  shutdown() {
    this.shutdownAt ??= performance.now();
    this.command((x) => x.h2_shutdown(this.handle));
  }

  /** The protocol is over: what is left to write goes, then the socket closes. */
  end() {
    if (this.closed) return;
    this.destroy(false);
    if (this.out.length) this.write();
    this.socket.end();
  }

  /** Closes the connection now; its calls are cancelled. */
  destroy(now = true) {
    if (this.closed) return;
    this.closed = true;
    this.inst.sessions.delete(this);
    for (const call of [...this.calls.values(), ...this.keeping.values()]) this.cancel(call);
    if (!this.inst.failed && this.handle >= 0) {
      try {
        this.inst.x.h2_free(this.handle);
      } catch (e) {
        fail(this.inst, e);
      }
    }
    if (now) this.socket.destroy();
  }
}
