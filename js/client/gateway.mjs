// The backend over etcd's JSON gateway (`/v3/...`), with `fetch` and web
// streams only: the same code runs in Node, Deno, Bun, workerd and browsers,
// against a real etcd 3.4/3.5 and edge-lease's server.
//
// Wire facts this relies on (etcd 3.4's grpc-gateway): int64s are JSON
// strings, bytes are base64, enums are names, zero values are omitted; an
// error is `{error, message, code}` with an HTTP status from the gRPC code;
// the streaming endpoints answer `{"result":...}` lines, and only once the
// request body has ended (Go's HTTP/1.1 server is not full duplex), so a
// keepalive is one POST with one message, and a watch is one POST whose
// answer stays open.
//
// Requests carry no Content-Type header: fetch sends text/plain, which the
// gateway parses as JSON anyway and which is a "simple" request for CORS
// (no preflight).

import { b64decode, int, leaseHex } from "./codec.mjs";
import { encodeBase64 } from "../base64.js";
import { LeaseError, aborted, closed, serverError, unavailable } from "./errors.mjs";
import { linkSignals } from "./signals.mjs";
import { NotOpened, socketStream, socketUrl } from "./socket.mjs";

const SORT_ORDER = { none: "NONE", ascend: "ASCEND", descend: "DESCEND" };
const SORT_TARGET = { key: "KEY", version: "VERSION", create: "CREATE", mod: "MOD", value: "VALUE" };
const TARGET = { version: "VERSION", create: "CREATE", mod: "MOD", value: "VALUE", lease: "LEASE" };
const TARGET_FIELD = { version: "version", create: "create_revision", mod: "mod_revision", value: "value", lease: "lease" };
const RESULT = { "=": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS", ">": "GREATER" };

// ---- messages out ----------------------------------------------------------

const bytes = (b) => (b && b.length ? encodeBase64(b) : undefined);
const num = (n) => (n ? String(n) : undefined);

function rangeOut(r) {
  return {
    key: encodeBase64(r.key),
    range_end: bytes(r.rangeEnd),
    limit: num(r.limit),
    revision: num(r.revision),
    sort_order: r.sortOrder && r.sortOrder !== "none" ? SORT_ORDER[r.sortOrder] : undefined,
    sort_target: r.sortTarget && r.sortTarget !== "key" ? SORT_TARGET[r.sortTarget] : undefined,
    keys_only: r.keysOnly || undefined,
    count_only: r.countOnly || undefined,
    min_mod_revision: num(r.minModRevision),
    max_mod_revision: num(r.maxModRevision),
    min_create_revision: num(r.minCreateRevision),
    max_create_revision: num(r.maxCreateRevision),
  };
}

function putOut(p) {
  return {
    key: encodeBase64(p.key),
    value: bytes(p.value),
    lease: p.lease ? p.lease.toString() : undefined,
    prev_kv: p.prevKv || undefined,
  };
}

const deleteOut = (d) => ({ key: encodeBase64(d.key), range_end: bytes(d.rangeEnd), prev_kv: d.prevKv || undefined });

function compareOut(c) {
  const field = TARGET_FIELD[c.target];
  let value;
  if (c.target === "value") value = encodeBase64(c.value);
  else value = String(c.value); // int64 as a string, 0 included (the oneof must be present)
  return {
    key: encodeBase64(c.key),
    range_end: bytes(c.rangeEnd),
    target: TARGET[c.target],
    result: RESULT[c.result],
    [field]: value,
  };
}

function opOut(op) {
  if (op.range) return { request_range: rangeOut(op.range) };
  if (op.put) return { request_put: putOut(op.put) };
  if (op.deleteRange) return { request_delete_range: deleteOut(op.deleteRange) };
  return { request_txn: txnOut(op.txn) };
}

const txnOut = (t) => ({
  compare: t.compare.map(compareOut),
  success: t.success.map(opOut),
  failure: t.failure.map(opOut),
});

// ---- messages in -----------------------------------------------------------

function kvIn(kv) {
  return {
    key: b64decode(kv.key),
    value: b64decode(kv.value),
    createRevision: int(kv.create_revision),
    modRevision: int(kv.mod_revision),
    version: int(kv.version),
    lease: kv.lease && kv.lease !== "0" ? leaseHex(kv.lease) : null,
  };
}

const revisionOf = (m) => int(m?.header?.revision);

function rangeIn(m, revision = revisionOf(m)) {
  return { kvs: (m.kvs ?? []).map(kvIn), more: Boolean(m.more), count: int(m.count), revision };
}

const putIn = (m, revision = revisionOf(m)) => ({ revision, prev: m.prev_kv ? kvIn(m.prev_kv) : null });

const deleteIn = (m, revision = revisionOf(m)) => ({
  deleted: int(m.deleted),
  revision,
  prev: (m.prev_kvs ?? []).map(kvIn),
});

// Sub-responses of a txn: etcd leaves the revision off nested headers; every
// op of a txn happened at the txn's revision.
function txnIn(m, revision = revisionOf(m)) {
  return {
    succeeded: Boolean(m.succeeded),
    revision,
    responses: (m.responses ?? []).map((r) => {
      if (r.response_range) return { range: rangeIn(r.response_range, revision) };
      if (r.response_put) return { put: putIn(r.response_put, revision) };
      if (r.response_delete_range) return { deleteRange: deleteIn(r.response_delete_range, revision) };
      if (r.response_txn) return { txn: txnIn(r.response_txn, revision) };
      // An empty response: a zero-valued range (proto3 leaves it all off).
      return { range: { kvs: [], more: false, count: 0, revision } };
    }),
  };
}

function watchIn(m) {
  return {
    revision: revisionOf(m),
    created: Boolean(m.created),
    canceled: Boolean(m.canceled),
    compactRevision: int(m.compact_revision),
    cancelReason: m.cancel_reason ?? "",
    events: (m.events ?? []).map((e) => ({
      type: e.type === "DELETE" || e.type === 1 ? "delete" : "put",
      kv: kvIn(e.kv ?? {}),
      prev: e.prev_kv ? kvIn(e.prev_kv) : null,
    })),
  };
}

// ---- transport -------------------------------------------------------------

/**
 * Splits a byte stream into lines and parses each as JSON. A line's text
 * is kept in pieces until its newline arrives, and only new text is
 * searched, so a long line costs time in proportion to its length.
 */
async function* jsonLines(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pieces = []; // the current line's text so far
  try {
    for (;;) {
      const { done, value } = await reader.read();
      const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      let at = 0;
      let nl;
      while ((nl = text.indexOf("\n", at)) >= 0) {
        pieces.push(text.slice(at, nl));
        const line = pieces.join("").trim();
        pieces = [];
        at = nl + 1;
        if (line) yield JSON.parse(line);
      }
      if (at < text.length) pieces.push(text.slice(at));
      if (done) {
        const last = pieces.join("").trim();
        if (last) yield JSON.parse(last); // a last message without its newline
        return;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export class GatewayBackend {
  #base;
  #fetch;
  #timeout;
  #headers;
  #webSocket; // the constructor, or null: HTTP streams only
  #closer = new AbortController();

  /**
   * `url`: the server's client URL (`http://127.0.0.1:2379`). Options:
   * `timeout` (ms, each unary request; default 10000), `fetch` (for a
   * workerd service binding or a test), `headers` (e.g. etcd's
   * `Authorization` token; or a function giving them for each request, as
   * auth.mjs's does).
   */
  constructor(url, { timeout = 10_000, fetch: f, headers, webSocket } = {}) {
    const u = new URL(String(url));
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new LeaseError("InvalidArgument", `connect() needs an http(s) URL, got ${u.protocol}`);
    }
    this.#base = u.href.replace(/\/+$/, "") + "/v3/";
    this.#fetch = f ?? ((...a) => globalThis.fetch(...a));
    this.#timeout = timeout;
    // (A function: called for each request's headers, as auth.mjs's token.)
    this.#headers = typeof headers === "function" ? headers : { ...headers };
    // Watches go over a WebSocket where the runtime has one, until this
    // server is found to answer them only over HTTP.
    this.#webSocket = webSocket === false ? null : webSocket ?? globalThis.WebSocket ?? null;
  }

  get url() {
    return this.#base.slice(0, -4);
  }

  /** Each unary request's time limit (ms) unless a call gives its own. */
  get timeout() {
    return this.#timeout;
  }

  /** fetch with the client's and the caller's signals and a timeout; errors as LeaseErrors. */
  async #post(path, body, signal, timeout) {
    if (this.#closer.signal.aborted) throw closed();
    const headers = typeof this.#headers === "function" ? await this.#headers() : this.#headers;
    const link = linkSignals([this.#closer.signal, signal], timeout, () =>
      unavailable(`${path}: no answer within ${timeout} ms`),
    );
    let res;
    try {
      res = await this.#fetch(this.#base + path, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: link.signal,
      });
    } catch (e) {
      link.dispose();
      throw this.#failure(e, link.signal, path);
    }
    return { res, link };
  }

  #failure(e, linked, path) {
    if (e instanceof LeaseError) return e;
    if (this.#closer.signal.aborted) return closed();
    if (linked?.aborted) return aborted(linked);
    return unavailable(`${path}: ${e?.message ?? e}${e?.cause?.code ? ` (${e.cause.code})` : ""}`, e);
  }

  /** An error answer as a LeaseError (its body is etcd's `{error, message, code}`). */
  async #errorOf(res, path) {
    const text = await res.text().catch(() => "");
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: `${path}: HTTP ${res.status} ${text.trim().slice(0, 200)}` };
    }
    return serverError(body, res.status);
  }

  async #unary(path, body, { signal, timeout = this.#timeout } = {}) {
    const { res, link } = await this.#post(path, body, signal, timeout);
    try {
      if (!res.ok) throw await this.#errorOf(res, path);
      const text = await res.text();
      try {
        return JSON.parse(text);
      } catch {
        throw new LeaseError("Internal", `${path}: the server's answer is not JSON: ${text.slice(0, 200)}`);
      }
    } catch (e) {
      throw this.#failure(e, link.signal, path);
    } finally {
      link.dispose();
    }
  }

  /** A streaming endpoint: its `result` messages, as they come; `onOpen()` once the server took it. */
  async *#stream(path, body, signal, timeout, onOpen) {
    const { res, link } = await this.#post(path, body, signal, timeout);
    try {
      if (!res.ok) throw await this.#errorOf(res, path);
      onOpen?.();
      if (!res.body) throw unavailable(`${path}: no response body`);
      for await (const m of jsonLines(res.body)) {
        if (m.error !== undefined) throw serverError(m, res.status);
        yield m.result ?? {};
      }
    } catch (e) {
      if (e instanceof SyntaxError) throw unavailable(`${path}: a broken message in the stream`, e);
      throw this.#failure(e, link.signal, path);
    } finally {
      link.dispose();
    }
  }

  async range(req, opts) {
    return rangeIn(await this.#unary("kv/range", rangeOut(req), opts));
  }

  async put(req, opts) {
    return putIn(await this.#unary("kv/put", putOut(req), opts));
  }

  async deleteRange(req, opts) {
    return deleteIn(await this.#unary("kv/deleterange", deleteOut(req), opts));
  }

  async txn(req, opts) {
    return txnIn(await this.#unary("kv/txn", txnOut(req), opts));
  }

  async compact(revision, { physical = false, signal, timeout } = {}) {
    const m = await this.#unary("kv/compaction", { revision: String(revision), physical: physical || undefined }, { signal, timeout });
    return { revision: revisionOf(m) };
  }

  async grant(ttl, id, opts) {
    const m = await this.#unary("lease/grant", { TTL: String(ttl), ID: id ? id.toString() : undefined }, opts);
    if (m.error) throw serverError({ message: m.error }, 200); // etcd 3.4 can put the error in the body
    return { id: leaseHex(m.ID), ttl: int(m.TTL) };
  }

  /** One keepalive: one POST with one message, one answer (etcd's gateway answers once the body ends). */
  async keepAlive(id, { signal, timeout = this.#timeout } = {}) {
    for await (const m of this.#stream("lease/keepalive", { ID: id.toString() }, signal, timeout)) {
      return int(m.TTL);
    }
    throw unavailable("lease/keepalive: the stream ended without an answer");
  }

  async revoke(id, opts) {
    return { revision: revisionOf(await this.#unary("lease/revoke", { ID: id.toString() }, opts)) };
  }

  async timeToLive(id, keys, opts) {
    const m = await this.#unary("lease/timetolive", { ID: id.toString(), keys: keys || undefined }, opts);
    return { ttl: int(m.TTL), grantedTtl: int(m.grantedTTL), keys: (m.keys ?? []).map(b64decode) };
  }

  async leases(opts) {
    const m = await this.#unary("lease/leases", {}, opts);
    return (m.leases ?? []).map((l) => leaseHex(l.ID));
  }

  /**
   * Maintenance/Status: this member's view (the endpoint set's health
   * probe): its member id, the leader it knows ("0": none), its raft term.
   */
  async status(opts) {
    const m = await this.#unary("maintenance/status", {}, opts);
    return { member: String(m.header?.member_id ?? "0"), leader: String(m.leader ?? "0"), raftTerm: int(m.raftTerm ?? m.raft_term) };
  }

  /** One watch stream (no timeout: it stays open); watch.mjs resumes it. */
  async *watch(req, { signal } = {}) {
    const create = {
      key: encodeBase64(req.key),
      range_end: bytes(req.rangeEnd),
      start_revision: num(req.startRevision),
      prev_kv: req.prevKv || undefined,
      // Progress notifications let a quiet watch resume from where they say
      // it is, not from before a later compaction (watch.mjs).
      progress_notify: true,
      filters: [req.noPut && "NOPUT", req.noDelete && "NODELETE"].filter(Boolean),
    };
    if (create.filters.length === 0) delete create.filters;
    const body = { create_request: create };
    let noSocket = false;
    if (this.#webSocket) {
      const link = linkSignals([this.#closer.signal, signal]);
      try {
        const headers = typeof this.#headers === "function" ? await this.#headers() : this.#headers;
        for await (const m of socketStream(this.#webSocket, socketUrl(this.#base) + "watch", headers, body, link.signal)) yield watchIn(m);
      } catch (e) {
        if (!(e instanceof NotOpened)) throw e;
        noSocket = true; // (or the server is down: the HTTP stream says which)
      } finally {
        link.dispose();
      }
    }
    // A server that answers over HTTP but did not upgrade has no socket for it.
    const learnt = () => noSocket && (this.#webSocket = null);
    for await (const m of this.#stream("watch", body, signal, Infinity, learnt)) {
      yield watchIn(m);
    }
  }

  close() {
    this.#closer.abort(closed());
  }
}
