// Loads etcd/proto/*.proto with protobufjs (Node only: the gRPC side,
// gen.mjs, and the tests' clients). The JSON gateway uses the plain schema gen.mjs writes instead.
import protobuf from "protobufjs";
import { fileURLToPath } from "node:url";
import { MAX_MESSAGE_DEPTH } from "../limits.mjs";

const dir = fileURLToPath(new URL(".", import.meta.url));

// Requests' 64-bit integers become decimal strings (toObject's longs:
// String) through Long#toString, which long.js computes by repeated
// division: ~200 ns for a lease id, a few percent of a keepalive's CPU.
// BigInt's is ~5x faster. Decoded values are made with `new util.Long`, so
// protobufjs is given this subclass (its documented way to change Long).
export class Long64 extends protobuf.util.Long {
  toString(radix) {
    if (radix !== undefined && radix !== 10) return super.toString(radix);
    const v = (BigInt(this.high) << 32n) | BigInt(this.low >>> 0);
    return (this.unsigned ? BigInt.asUintN(64, v) : BigInt.asIntN(64, v)).toString();
  }
}
protobuf.util.Long = Long64;

// protobufjs refuses messages nested past 100 (protoc's default) when it
// reads, converts or writes them: a Txn 50 deep. etcd's gogo code has no
// such limit; limits.mjs says how deep a Txn may be here.
protobuf.util.recursionLimit = protobuf.Reader.recursionLimit = MAX_MESSAGE_DEPTH;

export function loadRoot() {
  const root = new protobuf.Root();
  // Imports are by file name, all in this directory.
  root.resolvePath = (_origin, target) => dir + target;
  root.loadSync(["rpc.proto", "v3lock.proto", "v3election.proto", "health.proto"], { keepCase: true });
  root.resolveAll();
  return root;
}
