// The floor under any gRPC server on node:http2: a bare HTTP/2 server that
// answers every call with one fixed, pre-encoded message and grpc-status 0,
// doing no other work. benches/server.mjs measures it with the same client
// as the servers, so its CPU per call is what Node's HTTP/2 alone costs.
//
//   node benches/http2-floor.mjs <port>
import { createServer } from "node:http2";

const port = Number(process.argv[2]);
// A RangeResponse with a header (cluster, member, revision, term) and count 1.
const msg = Buffer.from([0x0a, 0x0c, 0x08, 0x01, 0x10, 0x02, 0x18, 0x03, 0x20, 0x04, 0x28, 0x05, 0x30, 0x06, 0x20, 0x01]);
const body = Buffer.alloc(5 + msg.length);
body.writeUInt32BE(msg.length, 1);
msg.copy(body, 5);

const server = createServer();
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  if (headers[":path"] === "/health") {
    stream.respond({ ":status": 200 });
    return stream.end('{"health":"true"}');
  }
  stream.resume();
  stream.on("end", () => {
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(body);
  });
});
server.listen(port, "127.0.0.1");
