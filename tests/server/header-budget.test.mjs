// Issue 31 item 2: a connection that keeps sending header blocks that are
// cheap to send and dear to decode (169 bytes, 254 KB decoded) gets GOAWAY
// ENHANCE_YOUR_CALM once its input has taken its share of the CPU, and
// the others are served meanwhile. Before, each such block took ~0.8 ms
// and the connection was served for as long as it sent them (one used 8.4
// s of CPU in 9.2 s; other clients' calls waited up to 773 ms). The real
// server (server/main.mjs) in a process of its own, so that the victim's
// latency is the server's and not this process's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "./slow-clients.mjs";
import { PREFACE, settings, bombFrames, attacker, startVictim, sleep } from "./h2-attacks.mjs";

// 64 KiB writes of bomb blocks, at most this many, for at most this long.
const WRITES = 2000;
const ATTACK_MS = 8000;
const BLOCKS = Math.floor((64 * 1024) / 178);

test("a connection sending HPACK bombs without end gets GOAWAY ENHANCE_YOUR_CALM; a victim's Watch and calls go on", async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const { port } = server;
  // A few bombs first, on a connection of their own: the module's code for
  // them is compiled on first use (~150 ms a read then, ~7 ms after), and
  // the victim's latency is measured against a warm server.
  const warm = attacker(t, port);
  await warm.connected;
  await warm.send(Buffer.concat([PREFACE, settings(), bombFrames(BLOCKS)]));
  for (let i = 0; i < 3; i++) await warm.send(bombFrames(BLOCKS, 2 * BLOCKS * (i + 1) + 1));
  await sleep(200);
  warm.destroy();
  const victim = await startVictim(t, server.url);

  const a = attacker(t, port);
  await a.connected;
  const t0 = performance.now();
  let writes = 0;
  let id = 1;
  await a.send(Buffer.concat([PREFACE, settings()]));
  while (!a.closed && writes < WRITES && performance.now() - t0 < ATTACK_MS) {
    await a.send(bombFrames(BLOCKS, id));
    id += 2 * BLOCKS;
    writes++;
    // (A turn for the victim, whose client shares this process.)
    await new Promise((ok) => setImmediate(ok));
  }
  const took = Math.round(performance.now() - t0);
  for (let i = 0; i < 100 && !a.closed; i++) await sleep(20);
  t.diagnostic(`the attacker sent ${writes} writes of ${BLOCKS} blocks in ${took} ms; ${a.closed ? `closed, GOAWAY ${a.goawayCode}` : "still open"}`);
  const v = await victim.finish();
  t.diagnostic(`victim: ${v.calls} Ranges, p50 ${v.p50} ms, p99 ${v.p99} ms, max ${v.max} ms; errors ${JSON.stringify(v.errors)}`);

  assert.equal(a.goawayCode, 11, "GOAWAY ENHANCE_YOUR_CALM");
  assert.ok(a.closed, "the attacker's connection is closed");
  assert.doesNotMatch(server.log(), /HTTP\/2 module failed/);
  assert.deepEqual(v.errors, []);
  assert.deepEqual(v.watch, { open: true, error: null, event: true });
});
