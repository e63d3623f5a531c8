// The floor under the one-writer watch fan-out on this machine: a bare TCP
// server doing only what any durable server must do per put, and nothing a
// real one adds (no HTTP/2, no protobuf, no engine). benches/server.mjs
// drives it with the load generator's `fanout` case, which mirrors the
// `watch` case's shape: every connection says it watches (one byte 'W',
// answered with 'w'); per cycle the writer's connection (the first) sends a
// put, the server writes it into its journal and fdatasyncs it on the event
// loop (as edge-lease's server syncs a lone write), then sends each
// connection its share of the events (the writer's with the put's answer),
// one write per connection. The client, too, does less than in the `watch`
// case (raw reads, nothing to decode), so what this reaches is more than
// any server could reach in that case here.
//
//   node benches/fanout-floor.mjs <port> <data dir>
import { createServer } from "node:net";
import { closeSync, fdatasyncSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";

const [port, dir] = [Number(process.argv[2]), process.argv[3]];
// The load generator's sizes (benches/load: FANOUT_*): a put, its answer, and
// the bytes of one watcher's event as a real server frames it.
const PUT_BYTES = 48;
const ANSWER_BYTES = 40;
const EVENT_BYTES = 72;
const WATCHERS = 100;

// A journal extended ahead of its records, as edge-lease's is, so a sync
// never changes the file's size.
const JOURNAL = 4 << 20;
const fd = openSync(join(dir, "journal"), "w+");
writeSync(fd, Buffer.alloc(JOURNAL), 0, JOURNAL, 0);
fdatasyncSync(fd);
let at = 0;

const conns = [];
let writer = null;

function put(record) {
  if (at + record.length > JOURNAL) at = 0;
  writeSync(fd, record, 0, record.length, at);
  at += record.length;
  fdatasyncSync(fd);
  // The watchers spread over the connections as the `watch` case spreads
  // them: watcher i on connection i % n.
  const n = conns.length;
  for (let c = 0; c < n; c++) {
    const events = Math.floor(WATCHERS / n) + (c < WATCHERS % n ? 1 : 0);
    const out = Buffer.alloc(events * EVENT_BYTES + (conns[c] === writer ? ANSWER_BYTES : 0), 1);
    conns[c].write(out);
  }
}

createServer({ noDelay: true }, (socket) => {
  let pending = 0; // bytes of a put still to come
  let record = [];
  socket.on("error", () => {});
  socket.on("close", () => {
    const i = conns.indexOf(socket);
    if (i >= 0) conns.splice(i, 1);
  });
  socket.on("data", (chunk) => {
    let i = 0;
    while (i < chunk.length) {
      if (pending > 0) {
        const take = Math.min(pending, chunk.length - i);
        record.push(chunk.subarray(i, i + take));
        pending -= take;
        i += take;
        if (pending === 0) {
          put(Buffer.concat(record));
          record = [];
        }
      } else if (chunk[i] === 0x57 /* W */) {
        // Connections register in the order the client opened them; the
        // first one is the writer's.
        if (conns.length === 0) writer = socket;
        conns.push(socket);
        socket.write("w");
        i++;
      } else {
        pending = PUT_BYTES;
      }
    }
  });
}).listen(port, "127.0.0.1");

process.on("exit", () => closeSync(fd));
