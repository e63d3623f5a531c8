// One port for both transports, as etcd serves them: a TCP server that looks
// at the first bytes of each connection and hands HTTP/2 (the client
// preface, "PRI * HTTP/2.0...") to gRPC and anything else to HTTP/1.1.
import { createServer } from "node:net";
import { Duplex } from "node:stream";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
// A connection that has not said which protocol it speaks by then is closed.
const SNIFF_TIMEOUT_MS = 10_000;

export function sniffingServer({ http1, http2 }) {
  return createServer((socket) => {
    let seen = Buffer.alloc(0);
    socket.setTimeout(SNIFF_TIMEOUT_MS, () => socket.destroy());
    socket.on("error", () => {});
    // As node:http and node:http2 do for their own sockets. gRPC goes
    // through a relay (below), so Nagle's algorithm would hold back small
    // frames (HTTP/2 window updates) behind delayed ACKs: a second large
    // response on one connection crawled at ~1 MB/s.
    socket.setNoDelay(true);
    const onData = (chunk) => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const h2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (h2 && seen.length < PREFACE.length) return;
      socket.off("data", onData);
      socket.setTimeout(0);
      if (h2) {
        http2(replay(socket, seen));
      } else {
        socket.pause();
        socket.unshift(seen);
        http1(socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  });
}

// node:http2 reads a net.Socket through its native handle, so bytes already
// read (the preface) cannot be put back with unshift() as node:http allows.
// This stream replays them and then relays the socket both ways.
function replay(socket, head) {
  const stream = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, encoding, done) {
      socket.write(chunk, encoding, done);
    },
    final(done) {
      socket.end(done);
    },
    destroy(err, done) {
      socket.destroy();
      done(err);
    },
  });
  socket.on("data", (chunk) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on("end", () => stream.push(null));
  socket.on("close", () => stream.destroy());
  stream.remoteAddress = socket.remoteAddress;
  stream.remotePort = socket.remotePort;
  stream.remoteFamily = socket.remoteFamily;
  stream.push(head);
  return stream;
}
