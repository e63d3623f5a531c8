// What every service shares: the response header, the conversions between
// etcd's wire values and the engine's, and the engine's errors as etcd's.
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { MAX_REQUEST_BYTES } from "../limits.mjs";
import { leaseInt64 } from "edge-lease/lease-id";

export const SERVER_VERSION = "3.4.23";
export const CLUSTER_VERSION = "3.4.0";
// etcd wraps a write in an InternalRaftRequest (a request header with a
// 64-bit id, and the field tag and length) before it compares the size.
const RAFT_OVERHEAD = 18;

const encoder = new TextEncoder();

export const bytesOf = (b) => (b instanceof Uint8Array ? b : new Uint8Array(0));
export const toBytes = (v) => (typeof v === "string" ? encoder.encode(v) : v);

/** A wire key as the engine takes it (any bytes); etcd refuses an empty key. */
export function keyOf(b) {
  const bytes = bytesOf(b);
  if (bytes.length === 0) throw Etcd.keyNotProvided();
  return bytes;
}

/**
 * A wire int64 (a decimal string here, a number or undefined) as a JS
 * number. Revisions and counts never pass 2^53 in practice; larger values
 * are clamped, which keeps every comparison with a real revision the same.
 */
export function int(v) {
  if (v === undefined || v === null) return 0;
  const n = typeof v === "number" ? v : Number(v);
  if (n > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
  if (n < -Number.MAX_SAFE_INTEGER) return -Number.MAX_SAFE_INTEGER;
  return n;
}

/** A wire int64 lease id (decimal string) -> the engine's id, or null for 0. */
export function leaseIn(id) {
  const n = BigInt(id ?? 0);
  return n === 0n ? null : n;
}

/** The engine's lease id (16 hex digits) -> a wire int64 (decimal string). */
export function leaseOut(hex) {
  return hex == null ? "0" : leaseInt64(hex).toString();
}

/** An engine entry -> mvccpb.KeyValue. */
export function kvOut(e, keysOnly = false) {
  const kv = {
    key: toBytes(e.key),
    create_revision: e.createRevision,
    mod_revision: e.modRevision,
    version: e.version,
    lease: leaseOut(e.lease),
  };
  if (!keysOnly) kv.value = toBytes(e.value);
  return kv;
}

/**
 * etcd's dbSize and dbSizeInUse: its backend file's size (which Defragment
 * shrinks) and what its data takes there. Here: the file store's journal
 * and snapshot, and the engine's data as the quota counts it (O(1)) with
 * the live journal's header, never more than is on disk: neither is 0 with
 * a file store, as etcd's never are. The Durable Object's store reports its
 * data as a journal with no header, and no store the data: the data for
 * both.
 */
export function dbSizes(lessor, store) {
  const data = lessor.sizeBytes;
  const files = store?.sizes;
  if (!files) return [data, data];
  const onDisk = files.journal + files.snapshot;
  return [onDisk, Math.min(onDisk, data + files.header)];
}

/**
 * Whether `e` says the engine itself failed: a wasm trap (the wrapper's
 * EngineFailed), or, on any call after one, wasm-bindgen's refusal to enter
 * an object a trap left borrowed; or has such a cause.
 */
export const isEngineFailure = (e) =>
  e instanceof WebAssembly.RuntimeError ||
  (e instanceof Error && (e.code === "EngineFailed" || e.message.includes("recursive use of an object detected") || isEngineFailure(e.cause)));

/**
 * Handler `fn` (a request and the call) with every error it throws, or its
 * promise rejects with, given to `onError`, which throws (the same error or
 * another).
 */
export const throughErrors = (fn, onError) => (req, call) => {
  let res;
  try {
    res = fn(req, call);
  } catch (e) {
    onError(e);
  }
  return typeof res?.then === "function" ? res.catch(onError) : res;
};

/** Refuses a write whose raft entry would pass etcd's request limit (--max-request-bytes). */
export function checkSize(call, max = MAX_REQUEST_BYTES) {
  checkBytes(call?.size ?? 0, max);
}

/** The same for a request of `size` bytes the server makes itself (v3lock's and v3election's txns). */
export function checkBytes(size, max = MAX_REQUEST_BYTES) {
  if (size + RAFT_OVERHEAD > max) throw Etcd.requestTooLarge();
}

/** Runs an engine call, turning its LeaseErrors into etcd's errors. */
export function engine(fn) {
  try {
    return fn();
  } catch (e) {
    throw etcdError(e);
  }
}

/** An engine's error (a LeaseError, or anything thrown) as etcd's error for it. */
export function etcdError(e) {
  // Already etcd's answer (a request refused while it was translated).
  if (e instanceof GrpcError) return e;
  switch (e?.code) {
    case "LeaseNotFound":
      return Etcd.leaseNotFound();
    case "LeaseExists":
      return Etcd.leaseExist();
    case "LeaseTtlTooLarge":
      return Etcd.leaseTtlTooLarge();
    case "Compacted":
      return Etcd.compacted();
    case "FutureRevision":
      return Etcd.futureRev();
    case "KeyNotFound":
      return Etcd.keyNotFound();
    case "DuplicateKey":
      return Etcd.duplicateKey();
    case "TooManyOps":
      return Etcd.tooManyOps();
    case "NoSpace":
      return Etcd.noSpace();
    case "InvalidArgument":
      return new GrpcError(Code.InvalidArgument, `edge-lease: ${e.message}`);
    case "NotPrimary":
    case "Closed":
      return new GrpcError(Code.Unavailable, "etcdserver: server stopped");
    default:
      // StorageFailed, or a bug: the client learns the write did not happen
      // (and the host, from the cause, whether the engine itself failed).
      return new GrpcError(Code.Unknown, `edge-lease: ${e?.message ?? e}`, { cause: e });
  }
}

/** A Txn's ops at its top level, both branches: what etcd's txn checks look at (a nested txn is one op). */
export const txnOps = (txn) => [...(txn?.success ?? []), ...(txn?.failure ?? [])];
/** etcd's isTxnReadonly: only ranges at the top level (else it goes through raft). */
export const txnReadOnly = (txn) => txnOps(txn).every((op) => op.request_range);

/** Builds response headers for one member. */
export function headers(lessor, member) {
  return {
    header: () => ({
      cluster_id: member.clusterId,
      member_id: member.id,
      revision: lessor.revision,
      raft_term: member.raftTerm,
    }),
    // Cluster calls answer from the membership store: no revision.
    clusterHeader: () => ({ cluster_id: member.clusterId, member_id: member.id, raft_term: member.raftTerm }),
  };
}
