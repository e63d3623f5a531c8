// Host headers Go's net/http refuses as malformed (a byte outside
// httpguts' validHostByte: "@", "/", a space), sent raw over HTTP/1.1 to a
// real etcd 3.4 and to edge-lease: the same 400 status line and body on
// the gateway and /health, while a well-formed Host is served by both.
// (URL parsing takes "evil.com@127.0.0.1" and "127.0.0.1/evil.com" for
// 127.0.0.1: the server's Host guard used to let them through.)
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { startBoth } from "./harness.mjs";

// One request on its own connection: { status (the status line), body }.
function request(url, method, path, host, body = "") {
  const { port } = new URL(url);
  return new Promise((ok, fail) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    const chunks = [];
    socket.setTimeout(5000, () => socket.destroy(new Error(`no answer from ${url} for Host ${host}`)));
    socket.on("data", (d) => chunks.push(d));
    socket.on("error", fail);
    socket.on("close", () => {
      const raw = Buffer.concat(chunks).toString("latin1");
      const [head, ...rest] = raw.split("\r\n\r\n");
      const lines = head.split("\r\n");
      let text = rest.join("\r\n\r\n");
      if (/^transfer-encoding: chunked$/im.test(head)) {
        let out = "";
        for (let at = 0; ; ) {
          const eol = text.indexOf("\r\n", at);
          const n = parseInt(text.slice(at, eol), 16);
          if (!(n > 0)) break;
          out += text.slice(eol + 2, eol + 2 + n);
          at = eol + 2 + n + 2;
        }
        text = out;
      }
      ok({ status: lines[0], body: text });
    });
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  });
}

test("a malformed Host header gets Go's 400 on both servers", async (t) => {
  const both = await startBoth(t);
  const answers = {};
  for (const side of [both.etcd, both.edge]) {
    const own = new URL(side.url).host;
    const got = [];
    for (const host of ["evil.com@127.0.0.1", "127.0.0.1/evil.com", `evil.com@${own}`, `${own}/evil.com`, "a b"]) {
      got.push([host.replace(own, "<own>"), "range", await request(side.url, "POST", "/v3/kv/range", host, '{"key":"YQ=="}')]);
      got.push([host.replace(own, "<own>"), "health", await request(side.url, "GET", "/health", host)]);
    }
    const served = [await request(side.url, "POST", "/v3/kv/range", own, '{"key":"YQ=="}'), await request(side.url, "GET", "/health", own)];
    answers[side === both.etcd ? "etcd" : "edge"] = { got, served: served.map((r) => r.status) };
  }
  assert.deepEqual(answers.edge, answers.etcd);
  const malformed = { status: "HTTP/1.1 400 Bad Request: malformed Host header", body: "400 Bad Request: malformed Host header" };
  for (const [host, path, r] of answers.etcd.got) assert.deepEqual(r, malformed, `${host} ${path}`);
  assert.deepEqual(answers.etcd.served, ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"]);
});
