// The floor under any server whose sockets are served by one Node thread:
// a bare TCP server that writes back what it reads, doing no other work.
// benches/server.mjs drives it with the load generator's `echo` case (raw
// TCP, no HTTP/2) at the same concurrency as the servers, so what it reaches
// is the most exchanges per second one Node thread can serve on these
// sockets on this machine, whatever runs above them.
//
//   node benches/socket-floor.mjs <port>
import { createServer } from "node:net";

const port = Number(process.argv[2]);
createServer({ noDelay: true }, (socket) => {
  socket.on("error", () => {});
  socket.on("data", (chunk) => socket.write(chunk));
}).listen(port, "127.0.0.1");
