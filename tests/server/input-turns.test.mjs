// Issue 31 item 2, the victim's side: a turn of the event loop does at most
// about TURN_SHARED_MS of all connections' input before those whose input
// is dear wait for the next turn, while a cheap connection's is read at
// once. Each connection's own 5 ms a turn was not enough: 8 connections of
// HPACK bombs, each within it, held a cheap client's call 67 ms (the
// median) in every turn. Driven synchronously on sessions over in-memory
// sockets, so what is asserted is what was read in which turn, not a time.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Duplex } from "node:stream";
import { H2Session } from "../../server/h2.mjs";
import { PREFACE, settings, bombFrames } from "./h2-attacks.mjs";

const nextTurn = () => new Promise((ok) => setImmediate(ok));

test("once this turn's input passed the shared budget, a dear connection's next read waits a turn; a cheap one's call is heard at once", async (t) => {
  const calls = new Map();
  const open = (name) => {
    const socket = new Duplex({ read() {}, write: (_c, _e, done) => done() });
    const s = new H2Session(socket, { onCall: () => calls.set(name, (calls.get(name) ?? 0) + 1), maxMessage: 1 << 20 });
    t.after(() => s.destroy());
    return s;
  };
  // (The module's code for these blocks is compiled at first use.)
  open("warm").input(Buffer.concat([PREFACE, settings(), bombFrames(20)]));
  const victim = open("victim");
  victim.input(Buffer.concat([PREFACE, settings()]));
  await nextTurn();
  await nextTurn();

  // In one turn: connection a0 reads bomb blocks one at a time until its
  // input took over 1.5 ms (dear, and under its own 5 ms), then others
  // until all together took over 12 ms. (Tried again in a later turn, 5
  // times at most, should a pause of the process put a0 past its own 5 ms:
  // then it would wait for that reason.)
  let a0, id, mine, spent;
  const took = (s, bytes) => {
    const t0 = performance.now();
    s.input(bytes);
    const ms = performance.now() - t0;
    spent += ms;
    return ms;
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    a0 = open(`a0-${attempt}`);
    a0.input(Buffer.concat([PREFACE, settings(), bombFrames(1)]));
    const others = [];
    for (let i = 0; i < 100; i++) (others[i] = open(`a${i + 1}-${attempt}`)).input(Buffer.concat([PREFACE, settings()]));
    await nextTurn();
    await nextTurn();
    [id, mine, spent] = [3, 0, 0];
    for (; mine < 1.5 && id < 400; id += 2) mine += took(a0, bombFrames(1, id));
    for (let i = 0; spent < 12 && i < others.length; i++) took(others[i], bombFrames(6));
    if (mine < 5) break;
  }
  assert.ok(mine < 5, `a0's own input: ${mine.toFixed(1)} ms`);
  assert.ok(spent >= 12, `this turn's input: ${spent.toFixed(1)} ms`);

  // a0 is dear and the turn's budget is spent: its next blocks wait, held
  // (bomb blocks are refused streams, not calls: what is read is seen in
  // what the session holds).
  const next = Buffer.concat([bombFrames(1, id), bombFrames(1, id + 2)]);
  a0.input(next);
  assert.equal(a0.backlog.size, next.length, "a0's blocks were read in the turn whose budget was spent");
  // The victim's call (one small header block) is heard at once.
  victim.input(bombFrames(1));
  assert.equal(calls.get("victim"), 1);

  // In the next turns a0's blocks are read.
  for (let i = 0; i < 20 && a0.backlog.size > 0; i++) await nextTurn();
  assert.equal(a0.backlog.size, 0);
  assert.equal(a0.closed, false);
});
