// Loads server/proto/*.proto with protobufjs (Node only: the gRPC side,
// gen.mjs, and the tests' clients). The JSON gateway uses the plain schema gen.mjs writes instead.
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
