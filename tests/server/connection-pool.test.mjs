// server/listen.mjs's connection cap, with sockets stood in for and an
// injected clock: who is evicted or refused past the cap, and a burst of
// new connections (accepted at once, none read yet) not evicting itself.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connectionPool, limitsFrom } from "../../server/listen.mjs";

function fakeSocket(name) {
  const closers = [];
  const s = {
    name,
    destroyed: false,
    once: (event, f) => event === "close" && closers.push(f),
    destroy() {
      if (s.destroyed) return;
      s.destroyed = true;
      for (const f of closers) f();
    },
  };
  return s;
}

function pool(opts) {
  let clock = 0;
  const busy = new Set();
  const p = connectionPool({ ...opts, busy: (c) => busy.has(c.socket.name), now: () => clock });
  const sockets = [];
  return {
    admit(name, kind = "sniff") {
      const s = fakeSocket(name);
      sockets.push(s);
      const conn = p.admit(s);
      if (conn && kind !== "sniff") Object.assign(conn, { kind, read: true });
      return conn;
    },
    heard: (conn) => p.heard(conn),
    open: () => sockets.filter((s) => !s.destroyed).map((s) => s.name),
    advance: (ms) => (clock += ms),
    busy,
    stats: p.stats,
  };
}

test("a burst of new connections past the cap goes over it by the burst allowance, then evicts its oldest", () => {
  const p = pool({ maxConnections: 4, burst: 2 });
  for (let i = 0; i < 6; i++) assert.ok(p.admit(`n${i}`));
  assert.deepEqual(p.open(), ["n0", "n1", "n2", "n3", "n4", "n5"]);
  assert.ok(p.admit("n6"));
  assert.deepEqual(p.open(), ["n1", "n2", "n3", "n4", "n5", "n6"]);
  assert.deepEqual(p.stats(), { open: 6, evicted: 1, refused: 0 });
});

test("old idle connections are evicted before new unread ones, oldest first", () => {
  const p = pool({ maxConnections: 3, burst: 2 });
  p.admit("idle0", "http1");
  p.admit("idle1", "http1");
  p.advance(5_000);
  p.admit("sniff-old");
  p.advance(2_000); // past the burst's second: evictable like any idle one
  for (const n of ["a", "b", "c"]) p.admit(n);
  assert.deepEqual(p.open(), ["a", "b", "c"]);
  p.admit("d");
  p.admit("e");
  assert.deepEqual(p.open(), ["a", "b", "c", "d", "e"]);
  p.admit("f");
  assert.deepEqual(p.open(), ["b", "c", "d", "e", "f"]);
});

test("as a burst over the cap is read, idle connections that are not new make room until it is back within the cap", () => {
  const p = pool({ maxConnections: 3, burst: 3 });
  p.admit("x", "http2");
  p.admit("y", "http2");
  p.busy.add("x").add("y");
  p.advance(5_000);
  const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => p.admit(n));
  assert.deepEqual(p.open(), ["x", "y", "a", "b", "c", "d"]);
  // x's call ends; d is read: x goes, and the rest are busy or new.
  p.busy.delete("x");
  p.heard(d);
  assert.deepEqual(p.open(), ["y", "a", "b", "c", "d"]);
  // A second on, c is read: a and b are no longer new, and go.
  p.advance(2_000);
  p.heard(c);
  assert.deepEqual(p.open(), ["y", "c", "d"]);
  assert.deepEqual(p.stats(), { open: 3, evicted: 3, refused: 0 });
  // Within the cap, being read evicts nothing.
  p.heard(a);
  p.heard(b);
  assert.deepEqual(p.open(), ["y", "c", "d"]);
});

test("the connection just read is never the one that makes room", () => {
  const p = pool({ maxConnections: 2, burst: 2 });
  p.admit("busy", "http2");
  p.busy.add("busy");
  p.advance(5_000);
  const a = p.admit("a");
  p.admit("b");
  p.advance(2_000);
  p.heard(a);
  assert.deepEqual(p.open(), ["busy", "a"]);
});

test("a new connection that was read is not protected by the burst", () => {
  const p = pool({ maxConnections: 2, burst: 2 });
  const a = p.admit("a");
  p.admit("b");
  a.read = true; // it said something: sniffed or being sniffed
  p.admit("c");
  assert.deepEqual(p.open(), ["b", "c"]);
});

test("every connection busy: the newcomer is refused, burst or not", () => {
  const p = pool({ maxConnections: 2, burst: 2 });
  p.admit("x", "http2");
  p.admit("y", "http1");
  p.busy.add("x").add("y");
  assert.equal(p.admit("z"), null);
  assert.deepEqual(p.open(), ["x", "y"]);
  assert.deepEqual(p.stats(), { open: 2, evicted: 0, refused: 1 });
  // A busy one and a new one: the newcomer joins the burst.
  p.busy.delete("y");
  p.admit("w");
  assert.deepEqual(p.open(), ["x", "w"]);
  assert.ok(p.admit("v"));
  assert.deepEqual(p.open(), ["x", "w", "v"]);
});

test("limits: the burst is half the reserve, at most the cap", () => {
  assert.deepEqual([limitsFrom({}, 128).maxConnections, limitsFrom({}, 128).burst], [64, 32]);
  assert.deepEqual([limitsFrom({}, 1024).maxConnections, limitsFrom({}, 1024).burst], [874, 75]);
  assert.deepEqual([limitsFrom({ EDGE_LEASE_MAX_CONNECTIONS: "4" }, 1024).maxConnections, limitsFrom({ EDGE_LEASE_MAX_CONNECTIONS: "4" }, 1024).burst], [4, 4]);
  assert.equal(limitsFrom({}, null).maxConnections, Infinity);
});
