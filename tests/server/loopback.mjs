// The real gRPC transport (server/grpc.mjs) serving `services` on a
// loopback port, for tests: `{ url, connect() }`, where connect() opens an
// HTTP/2 session to it. After the test the sessions are destroyed, then the
// transport and the listener closed.
import { createServer } from "node:net";
import { connect as http2Connect } from "node:http2";
import { createGrpcServer } from "../../server/grpc.mjs";

export async function grpcOnLoopback(t, services, options) {
  const grpc = createGrpcServer(services, options);
  const server = createServer((socket) => grpc.serve(socket));
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${server.address().port}`;
  const sessions = [];
  t.after(() => {
    for (const s of sessions) s.destroy();
    grpc.close();
    server.close();
  });
  return {
    url,
    connect() {
      const s = http2Connect(url);
      sessions.push(s);
      return s;
    },
  };
}
