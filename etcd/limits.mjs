// etcd's size limits, one home for both transports and both hosts: a
// request's size is checked where etcd checks it, whichever way it came.

// How deeply Txns may nest. etcd reads any depth, then its checkTxnRequest
// gives each nested Txn the --max-txn-ops budget its ancestors left (each
// level takes at least one), so at its default (128) any deeper request is
// refused "too many operations in txn request". Past this depth the
// decoders (protobufjs, jsonpb, the engine's codec: all recursive) refuse
// it with that error before reading further, which is etcd's answer
// unless --max-txn-ops is set above it.
export const MAX_TXN_DEPTH = 256;
// In messages: a Txn level is a TxnRequest and a RequestOp (and a
// TxnResponse and a ResponseOp, with its header, on the way out).
export const MAX_MESSAGE_DEPTH = 2 * MAX_TXN_DEPTH + 8;

// etcd's --max-request-bytes default, checked on what goes through raft.
export const MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
// The most --max-request-bytes may be here: a request is held a few times
// over on its way into the engine (JSON, base64, bytes), within wasm's 4 GiB.
// etcd itself warns past 10 MiB.
export const MAX_REQUEST_BYTES_LIMIT = 128 * 1024 * 1024;
// What etcd adds to it for gRPC's receive limit and its watch fragments.
export const GRPC_OVERHEAD_BYTES = 512 * 1024;
// etcd's gRPC receive limit: --max-request-bytes (1.5 MiB by default) and
// 512 KiB of gRPC overhead.
export const MAX_MESSAGE_BYTES = MAX_REQUEST_BYTES + GRPC_OVERHEAD_BYTES;
// JSON carries bytes as base64 (4/3) plus field names: room for a message
// at the gRPC limit, and not unbounded.
export const bodyLimit = (maxMessage) => 4 * maxMessage;
export const MAX_BODY_BYTES = bodyLimit(MAX_MESSAGE_BYTES);
// A single message inside a stream body, or in one WebSocket frame.
export const MAX_STREAM_MESSAGE_BYTES = 64 * 1024;
