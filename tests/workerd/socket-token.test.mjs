// The Worker's token on a WebSocket, where a browser cannot send headers:
// as the subprotocols `Bearer, <token>` (as etcd's gateway websocket proxy
// reads them). The right token opens the socket, answered with the
// subprotocol `Bearer` only (the token is not echoed); a wrong or missing
// one is refused with 401 before any upgrade. edge-lease/client, given the
// Worker's token and a WebSocket that takes no headers (a browser's),
// watches over the socket that way. Miniflare; every wait is bounded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { WebSocket as Base } from "undici";
import { startWorker } from "./harness.mjs";
import { b64 } from "../etcd/harness.mjs";
import { connect } from "../../js/client/index.mjs";
import { within } from "../client/servers.mjs";

const TOKEN = "s3cret-Token.1";

// A WebSocket as browsers have it: subprotocols only (a string or a list);
// anything else is a SyntaxError, as WebIDL's conversion makes it. It
// records what each socket offered and whether it opened.
function browserWebSocket() {
  const seen = [];
  class WebSocket extends Base {
    constructor(url, protocols) {
      if (protocols !== undefined && typeof protocols !== "string" && !Array.isArray(protocols)) {
        throw new DOMException(`'${String(protocols)}' is not a valid subprotocol`, "SyntaxError");
      }
      super(url, protocols);
      const s = { protocols, opened: false, protocol: null };
      seen.push(s);
      this.addEventListener("open", () => ((s.opened = true), (s.protocol = this.protocol)));
    }
  }
  return { WebSocket, seen };
}

// A socket on `url` offering `protocols`: { opened, protocol, first } (its
// first message after a watch create), or { opened: false } once it closes; within 10 s.
function tryOpen(url, protocols) {
  return within(
    new Promise((resolve) => {
      const ws = new Base(url, protocols);
      ws.addEventListener("open", () => ws.send(JSON.stringify({ create_request: { key: b64("k") } })));
      ws.addEventListener("message", (e) => {
        resolve({ opened: true, protocol: ws.protocol, first: JSON.parse(e.data).result });
        ws.close(1000);
      });
      ws.addEventListener("close", () => resolve({ opened: false }));
      ws.addEventListener("error", () => {});
    }),
    10_000,
    "the socket",
  );
}

test("Worker: its token as the subprotocols Bearer, <token> opens a WebSocket; a wrong one is refused (401)", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: TOKEN } });
  const url = w.url("socks") + "/v3/watch";
  const good = await tryOpen(url.replace(/^http/, "ws"), ["Bearer", TOKEN]);
  assert.deepEqual([good.opened, good.protocol, good.first?.created], [true, "Bearer", true]);
  for (const protocols of [["Bearer", "s3cret-Token.2"], ["Bearer"], [TOKEN], undefined]) {
    assert.deepEqual(await tryOpen(url.replace(/^http/, "ws"), protocols), { opened: false }, JSON.stringify(protocols));
  }
  // What the refusal is: 401 before any upgrade, Unauthenticated; the answer to the right one names only Bearer.
  const upgrade = (protocol) => w.mf.dispatchFetch(url, { headers: { upgrade: "websocket", "sec-websocket-protocol": protocol } });
  const refused = await upgrade("Bearer, nope");
  assert.deepEqual([refused.status, (await refused.json()).code], [401, 16]);
  const accepted = await upgrade(`Bearer, ${TOKEN}`);
  assert.equal(accepted.status, 101);
  assert.equal(accepted.headers.get("sec-websocket-protocol"), "Bearer");
  accepted.webSocket.accept();
  accepted.webSocket.close(1000);
});

test("edge-lease/client with the Worker's token and a browser's WebSocket: the watch goes over the socket, the token as a subprotocol", { timeout: 60_000 }, async (t) => {
  const w = await startWorker(t, { bindings: { EDGE_LEASE_TOKEN: TOKEN } });
  for (const headers of [{ "X-Edge-Lease-Token": TOKEN }, { Authorization: `Bearer ${TOKEN}` }]) {
    const { WebSocket, seen } = browserWebSocket();
    const client = connect(w.url("client"), { headers, webSocket: WebSocket, timeout: 10_000 });
    t.after(() => client.close());
    const key = `k-${seen.length}-${Object.keys(headers)[0]}`;
    const watch = client.watch(key);
    await within(watch.ready, 10_000, "the watch created");
    await client.put(key, "v");
    const { value } = await within(watch.next(), 10_000, "the event");
    assert.deepEqual([value.type, value.key, value.value], ["put", key, "v"]);
    await watch.return();
    assert.deepEqual(seen.map((s) => [s.protocols, s.opened, s.protocol]), [[["Bearer", TOKEN], true, "Bearer"]], JSON.stringify(headers));
  }
  // A wrong token: the socket is refused, and so is the HTTP stream the client tries next.
  const { WebSocket, seen } = browserWebSocket();
  const wrong = connect(w.url("client"), { headers: { "X-Edge-Lease-Token": "nope" }, webSocket: WebSocket, timeout: 10_000 });
  t.after(() => wrong.close());
  const watch = wrong.watch("k");
  await assert.rejects(within(watch.ready, 10_000, "the refusal"), { code: "Unauthenticated" });
  assert.deepEqual(seen.map((s) => s.opened), [false]);
});
