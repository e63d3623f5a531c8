// A gRPC WatchResponse's bytes, made from its events' encodings. An event
// many watchers get is one object (the lessor shares it, the watch service
// keeps its wire form), so it is encoded once, and a large value is never
// copied into its encoding: the encoding is pieces around the value's own
// bytes. A response past GATHER_BYTES is those pieces too (`Pieces`), which
// the transport copies out a part at a time (h2.mjs): a catch-up of 20 MiB
// to 100 streams holds 20 MiB, not 2 GB, also while the clients do not read.

// A response past this many bytes is sent as its pieces.
const GATHER_BYTES = 4096;
// An event with a value at least this long keeps its encoding in pieces,
// its values not copied; a shorter one is joined into one piece.
const VALUE_PIECE_BYTES = 1024;
// WatchResponse's field 11 (events), length-delimited: one byte.
const EVENTS_TAG = (11 << 3) | 2;

/** Bytes made of pieces in order: `length`, and `copy(into, from)`, as h2.mjs sends a message. */
export class Pieces {
  // Where the last copy ended: the next goes on from there.
  #i = 0;
  #start = 0;

  constructor(list, length) {
    this.list = list;
    this.length = length;
  }

  /** Fills `into` with the bytes from byte `from` on. */
  copy(into, from) {
    let [i, start] = from >= this.#start ? [this.#i, this.#start] : [0, 0];
    let done = 0;
    while (done < into.length) {
      const piece = this.list[i];
      const at = from + done - start; // where in this piece
      if (at < piece.length) {
        const take = Math.min(piece.length - at, into.length - done);
        into.set(at === 0 && take === piece.length ? piece : piece.subarray(at, at + take), done);
        done += take;
        if (done === into.length && at + take < piece.length) break;
      }
      start += piece.length;
      i++;
    }
    [this.#i, this.#start] = [i, start];
  }
}

// Varints and fields, written into a plain array of bytes.
function varint(out, n) {
  if (typeof n === "number" && n >= 0 && n <= 0xffffffff) {
    for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
    out.push(n);
    return;
  }
  // int64 as proto3 writes it: two's complement, 10 bytes when negative.
  let b = BigInt.asUintN(64, BigInt(n));
  for (; b > 127n; b >>= 7n) out.push(Number(b & 127n) | 128);
  out.push(Number(b));
}

const isZero = (v) => v === 0 || v === "0" || v === undefined || v === null;

function int64Field(out, field, v) {
  if (isZero(v)) return;
  out.push(field << 3);
  varint(out, typeof v === "string" && Number.isSafeInteger(Number(v)) ? Number(v) : v);
}

// An mvccpb.KeyValue as pieces: the fields before the value, the value's
// own bytes, the lease after it; and its length.
function keyValue(kv) {
  const head = [];
  if (kv.key?.length) {
    head.push((1 << 3) | 2);
    varint(head, kv.key.length);
    for (const b of kv.key) head.push(b);
  }
  int64Field(head, 2, kv.create_revision);
  int64Field(head, 3, kv.mod_revision);
  int64Field(head, 4, kv.version);
  const value = kv.value ?? EMPTY;
  if (value.length > 0) {
    head.push((5 << 3) | 2);
    varint(head, value.length);
  }
  const tail = [];
  int64Field(tail, 6, kv.lease);
  return { pieces: [Uint8Array.from(head), value, Uint8Array.from(tail)], length: head.length + value.length + tail.length };
}
const EMPTY = new Uint8Array(0);

// A nested message field's tag and length, then its pieces.
function nested(out, field, m) {
  const prefix = [(field << 3) | 2];
  varint(prefix, m.length);
  out.push(Uint8Array.from(prefix), ...m.pieces);
  return prefix.length + m.length;
}

/**
 * An mvccpb.Event (its wire form: `{ type, kv, prev_kv }`) as it goes in
 * a WatchResponse: field 11's tag and length, then the event's bytes, as
 * pieces (small ones joined); the same bytes protobufjs writes.
 */
function framedEvent(e) {
  const pieces = [];
  let length = 0;
  if (e.type === "DELETE") {
    pieces.push(Uint8Array.of(1 << 3, 1));
    length += 2;
  }
  if (e.kv) length += nested(pieces, 2, keyValue(e.kv));
  if (e.prev_kv) length += nested(pieces, 3, keyValue(e.prev_kv));
  const prefix = [EVENTS_TAG];
  varint(prefix, length);
  const all = [Uint8Array.from(prefix), ...pieces.filter((p) => p.length > 0)];
  const size = prefix.length + length;
  // Joined where nothing long is in it: one piece to copy.
  if (all.every((p) => p.length < VALUE_PIECE_BYTES)) return { pieces: [joined(all, size)], length: size };
  return { pieces: all, length: size };
}

function joined(list, size) {
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of list) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const framed = new WeakMap();

/** An event's framed encoding, made once per event object. */
export function eventPieces(e) {
  let f = framed.get(e);
  if (f === undefined) {
    f = framedEvent(e);
    framed.set(e, f);
  }
  return f;
}

/**
 * A WatchResponse from its encoded header and other fields (`head`, `rest`:
 * bytes) and its events (their wire form): bytes, or Pieces past
 * GATHER_BYTES.
 */
export function watchResponse(head, rest, events) {
  const list = [head, rest];
  let size = head.length + rest.length;
  for (const e of events) {
    const f = eventPieces(e);
    for (const p of f.pieces) list.push(p);
    size += f.length;
  }
  return size > GATHER_BYTES ? new Pieces(list, size) : joined(list, size);
}
