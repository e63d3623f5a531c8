// Watches over a WebSocket where the server upgrades (etcd's gateway, through
// its websocket proxy; edge-lease's server; the Worker:
// tests/workerd/lock-waits.test.mjs), over HTTP where it does not: learnt
// from one attempt, then HTTP only. Either way every event once, in order; a socket
// that drops is resumed from the last revision delivered.
import assert from "node:assert/strict";
import { WebSocket as Base } from "undici";
import { eachBackend, useServers, within } from "./servers.mjs";

useServers();

// undici's WebSocket (Node 20 has none of its own), counting sockets.
function countingWebSocket(path = null) {
  const seen = { made: 0, opened: 0, sockets: [] };
  class WebSocket extends Base {
    constructor(url, ...a) {
      // (`path`: dial another path, which no server upgrades, as a server without sockets.)
      super(path ? url.replace(/\/v3\/watch$/, path) : url, ...a);
      seen.made++;
      seen.sockets.push(this);
      this.addEventListener("open", () => seen.opened++);
    }
  }
  return { WebSocket, seen };
}

// The next `n` events (next(), not a for-await: a break would end the watch).
async function take(w, n) {
  const out = [];
  while (out.length < n) {
    const { value: ev, done } = await w.next();
    if (done) break;
    out.push([ev.type, ev.key, ev.value]);
  }
  return out;
}

for (const [what, path] of [["over a WebSocket", null], ["over HTTP where the server does not upgrade", "/version"]]) {
eachBackend(`watch ${what}, with the same events`, { needs: ["watch", "server"] }, async (t, { connect }) => {
  const { WebSocket, seen } = countingWebSocket(path);
  const etcd = connect({ webSocket: WebSocket });
  const w = etcd.watch("sock/", { prefix: true });
  await w.ready;
  await etcd.put("sock/a", "1");
  await etcd.delete("sock/a");
  assert.deepEqual(await within(take(w, 2), 5000, "two events"), [["put", "sock/a", "1"], ["delete", "sock/a", ""]]);
  const w2 = etcd.watch("sock/", { prefix: true });
  await w2.ready;
  await w2.return();
  await w.return();
  if (path === null) assert.deepEqual([seen.made, seen.opened], [2, 2], "both watches on sockets");
  else assert.deepEqual([seen.made, seen.opened], [1, 0], "no upgrade: one attempt, then HTTP only");
});
}

eachBackend("a watch socket that drops is resumed from the last revision delivered", { needs: ["watch", "server"] }, async (t, { connect }) => {
  const { WebSocket, seen } = countingWebSocket();
  const etcd = connect({ webSocket: WebSocket });
  const w = etcd.watch("drop/", { prefix: true });
  await w.ready;
  await etcd.put("drop/a", "1");
  const first = await within(take(w, 1), 5000, "the first event");
  seen.sockets.at(-1).close(4000, "cut by the test");
  await etcd.put("drop/b", "2");
  await etcd.put("drop/c", "3");
  const rest = await within(take(w, 2), 10_000, "the events after the drop");
  assert.deepEqual([...first, ...rest].map((e) => e[1]), ["drop/a", "drop/b", "drop/c"], "nothing lost or repeated");
  assert.ok(seen.opened >= 2, "a new socket after the drop");
  await w.return();
});
