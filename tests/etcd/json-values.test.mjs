// The streaming body's values (etcd/json-values.mjs): found as the pieces
// come, each character looked at once, so a body sent a character at a time
// costs what it costs whole (it used to be rescanned from the value's start
// after every piece: the square of its length). Work is counted in
// characters scanned, not timed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { JsonStream, scanValue } from "../../etcd/json-values.mjs";
import { Lessor } from "../../server/engine.mjs";
import { createServices } from "../../etcd/services/index.mjs";
import { createGateway } from "../../etcd/gateway.mjs";

const member = { id: "1", clusterId: "2", name: "m", peerURLs: [], clientURLs: [], raftTerm: "1" };

// The values of `text` by scanValue over the whole text, as etcd's
// concatenated-values reading takes them.
function whole(text) {
  const out = [];
  for (let i = 0; ; ) {
    const span = scanValue(text, i, true);
    if (span === null) return out;
    assert.notEqual(span, "partial");
    out.push(text.slice(span[0], span[1]));
    i = span[1];
  }
}

function streamed(pieces) {
  const s = new JsonStream();
  const out = [];
  for (const p of pieces) out.push(...s.push(p));
  assert.equal(s.unfinished, false);
  const last = s.end();
  if (last !== null) out.push(last);
  return { out, scanned: s.scanned };
}

test("a 360 KB watch body sent one character at a time is scanned once", () => {
  // Six create requests just under the stream's 64 KiB per message, with
  // escapes and brackets inside their strings, and whitespace between.
  const value = (i) => JSON.stringify({ create_request: { key: Buffer.from(`k${i}`).toString("base64"), range_end: "x\\\"}]{[".repeat(8) + "A".repeat(60_000), prev_kv: true } });
  const values = Array.from({ length: 6 }, (_, i) => value(i));
  const body = values.join("\n \t");
  assert.ok(body.length > 360_000);
  const { out, scanned } = streamed([...body]);
  assert.deepEqual(out, values);
  assert.ok(scanned <= body.length, `${scanned} characters scanned for a body of ${body.length}`);
});

test("however the text is cut, the values are those of the whole text", () => {
  const text = ' {"a":"}\\"{","b":[1,{"c":"]"}]} [] "s\\\\" "\\"" 12 true,null:-3.5e+2 } {"d":{}}\n"é" 7';
  const want = whole(text);
  assert.deepEqual(want, ['{"a":"}\\"{","b":[1,{"c":"]"}]}', "[]", '"s\\\\"', '"\\""', "12", "true", ",", "null", ":", "-3.5e+2", "}", '{"d":{}}', '"é"', "7"]);
  for (let size = 1; size <= text.length; size++) {
    const pieces = [];
    for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
    const { out, scanned } = streamed(pieces);
    assert.deepEqual(out, want, `pieces of ${size}`);
    assert.ok(scanned <= text.length, `pieces of ${size}: ${scanned} scanned`);
  }
});

test("a value cut off by the end is unfinished; a literal is ended by it", () => {
  const s = new JsonStream();
  assert.deepEqual(s.push('{"a": "b'), []);
  assert.equal(s.unfinished, true);
  assert.equal(s.pending, 8);
  const t = new JsonStream();
  assert.deepEqual(t.push("[1] 12"), ["[1]"]);
  assert.equal(t.unfinished, false);
  assert.equal(t.end(), "12");
});

test("through the gateway: keepalives sent one byte per chunk are each answered", async (t) => {
  const lessor = new Lessor({ autoTick: false });
  t.after(() => lessor.close());
  const gateway = createGateway({ services: createServices({ lessor, member }) });
  const ids = [lessor.grant(60).id, lessor.grant(60).id].map((h) => BigInt(`0x${h}`).toString());
  const bytes = new TextEncoder().encode(ids.map((ID) => JSON.stringify({ ID })).join("\n") + ' {"ID":"1"}');
  let at = 0;
  const body = new ReadableStream({
    pull(c) {
      if (at < bytes.length) c.enqueue(bytes.subarray(at, ++at));
      else c.close();
    },
  });
  const res = await gateway(new Request("http://127.0.0.1/v3/lease/keepalive", { method: "POST", body, duplex: "half" }));
  assert.equal(res.status, 200);
  const lines = (await res.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l).result);
  assert.deepEqual(lines.map((r) => [r.ID, r.TTL]), [[ids[0], "60"], [ids[1], "60"], ["1", undefined]]);
});
