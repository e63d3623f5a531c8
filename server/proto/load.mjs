// Loads server/proto/*.proto with protobufjs (Node only: the gRPC side and
// gen.mjs). The JSON gateway uses the plain schema gen.mjs writes instead.
import * as grpc from "@grpc/grpc-js";
import protobuf from "protobufjs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL(".", import.meta.url));

export function loadRoot() {
  const root = new protobuf.Root();
  // Imports are by file name, all in this directory.
  root.resolvePath = (_origin, target) => dir + target;
  root.loadSync(["rpc.proto", "v3lock.proto", "v3election.proto"], { keepCase: true });
  root.resolveAll();
  return root;
}

let shared;

/**
 * A @grpc/grpc-js client of `service` (e.g. "etcdserverpb.KV") at `url`
 * with these definitions, for tests and benchmarks (the same bytes to a
 * real etcd and to edge-lease). Responses are plain objects: 64-bit
 * integers as decimal strings, enums as names (`enums: String`), bytes as
 * `bytes` says (String: base64; Buffer). `channel` options go to grpc-js.
 */
export function grpcClient(url, service, { bytes = String, enums = String, channel = {} } = {}) {
  shared ??= loadRoot();
  const svc = shared.lookupService(service);
  const def = {};
  for (const m of svc.methodsArray) {
    const Req = shared.lookupType(m.requestType);
    const Res = shared.lookupType(m.responseType);
    def[m.name] = {
      path: `/${service}/${m.name}`,
      requestStream: Boolean(m.requestStream),
      responseStream: Boolean(m.responseStream),
      requestSerialize: (o) => Buffer.from(Req.encode(Req.fromObject(o)).finish()),
      responseDeserialize: (b) => Res.toObject(Res.decode(b), { longs: String, enums, bytes }),
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(def, service);
  return new Ctor(url.replace("http://", ""), grpc.credentials.createInsecure(), channel);
}
