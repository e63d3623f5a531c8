// etcdserverpb.Maintenance: Status, HashKV, Alarm (alarms.mjs), Snapshot
// (snapshot.mjs: etcd's backend file, which etcd can restore), MoveLeader
// (to itself) and Defragment (compacts the file store's journal into its
// snapshot).
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { SERVER_VERSION, dbSizes, engine, etcdError, int } from "./common.mjs";
import { alarmRpc } from "./alarms.mjs";
import { etcdSnapshot, wholeFile } from "./snapshot.mjs";
import { secondsSince } from "./metrics.mjs";

// etcd sends its file in pieces of this size, then its SHA-256 (which
// `etcdctl snapshot restore` checks); no header.
const SNAPSHOT_CHUNK = 32 * 1024;
// Without a `snapshot` source from the host, a snapshot is built whole in
// memory (the file, the history read into it from the engine) while the
// server waits, so it is bounded by the data's size: so that it cannot run
// the engine out of memory nor hold the server long enough for kept-alive
// leases to expire (~0.4 s at 64 MiB here).
export const MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024;
// Past this much data a host's `hashKv` source (a worker thread) computes
// HashKV, which reads every version: inline it stops the event loop for as
// long (400k versions: 142 ms here, 1.2 million: ~0.6 s); in the worker the
// loop's longest wait was 14 ms, though the answer took longer (2.4 s for
// 400k versions: the worker restores an engine from the store first).
// Under the bound it is done at once, in ~50 ms at most.
export const HASH_KV_INLINE_BYTES = 16 * 1024 * 1024;

/**
 * `snapshot(alarms, signal)`: the host's source of etcd's snapshot file (the
 * Node server builds it off the event loop from its store's files), an
 * async iterable of `{ size }`, the file's bytes in pieces, then
 * `{ sha256 }`, which ends early once `signal` (the call's) aborts;
 * without one, the file is built here from `lessor` when its data is at most
 * `maxSnapshotBytes` (a Worker's isolate has less memory).
 */
export function maintenanceService({ lessor, store, member, header, alarms, stats, maxSnapshotBytes = MAX_SNAPSHOT_BYTES, snapshot = null, hashKv = null, hashKvInlineBytes = HASH_KV_INLINE_BYTES }) {
  // One at a time, so that slow readers cannot pile copies up.
  let sending = false;
  const mb = (n) => (n / 2 ** 20).toFixed(1);
  async function* inMemory(list) {
    if (lessor.sizeBytes > maxSnapshotBytes) {
      const why = `the data (${mb(lessor.sizeBytes)} MiB) is more than a snapshot is built from in memory (${mb(maxSnapshotBytes)} MiB): etcdctl make-mirror copies it instead`;
      throw new GrpcError(Code.ResourceExhausted, `edge-lease: ${why}`);
    }
    const file = wholeFile(etcdSnapshot(lessor, list));
    yield { size: file.length };
    yield file;
    yield { sha256: new Uint8Array(await crypto.subtle.digest("SHA-256", file)) };
  }
  return {
    Status() {
      const [dbSize, dbSizeInUse] = dbSizes(lessor, store);
      // No raft here: the applied index is the revision, the term fixed.
      return {
        header: header(),
        version: SERVER_VERSION,
        dbSize,
        leader: member.id,
        raftIndex: lessor.revision,
        raftTerm: member.raftTerm,
        raftAppliedIndex: lessor.revision,
        errors: alarms.errors(),
        dbSizeInUse,
      };
    },
    Alarm(req) {
      return alarmRpc(alarms, req);
    },
    HashKV(req, call) {
      const t0 = performance.now();
      const rev = int(req.revision);
      if (!hashKv || lessor.sizeBytes <= hashKvInlineBytes) {
        const hash = engine(() => lessor.hashKv(rev));
        stats.hashKv.observe(secondsSince(t0));
        return { header: header(), hash, compact_revision: lessor.compactRevision };
      }
      // etcd's refusals on the state now; then the history up to the
      // revision asked for (the current one for 0) is hashed from the
      // store once durable, off the event loop.
      if (rev > 0 && rev <= lessor.compactRevision) throw Etcd.compacted();
      if (rev > lessor.revision) throw Etcd.futureRev();
      const upto = rev === 0 ? lessor.revision : rev;
      return lessor
        .flush()
        .then(() => hashKv(upto, call?.signal))
        .then(
          ({ hash, compactRevision }) => {
            stats.hashKv.observe(secondsSince(t0));
            // (For 0 the header names the revision hashed, as etcd's does.)
            const h = header();
            return { header: rev === 0 ? { ...h, revision: upto } : h, hash, compact_revision: compactRevision };
          },
          (e) => {
            throw etcdError(e);
          },
        );
    },
    Snapshot: {
      async *stream(req, call) {
        if (sending) throw new GrpcError(Code.Unavailable, "edge-lease: another snapshot is being sent: try again once it is done");
        sending = true;
        try {
          const list = alarms.get("NONE");
          const t0 = performance.now();
          let left = 0;
          for await (const m of evenly(snapshot ? snapshot(list, call?.signal, lessor.expiryHeldSince) : inMemory(list))) {
            if (m instanceof Uint8Array) {
              left -= m.length;
              yield { remaining_bytes: String(left), blob: m };
            } else if (m.sha256) yield { remaining_bytes: "0", blob: m.sha256 };
            else {
              left = m.size;
              stats.snapshot.observe(secondsSince(t0));
            }
          }
        } finally {
          sending = false;
        }
      },
    },
    // The one member leads: moving the lead to it is done at once (etcd
    // answers no header), to anyone else refused as etcd refuses a target
    // that is not a member.
    MoveLeader(req) {
      if (String(req.targetID ?? "0") === String(member.id)) return {};
      throw new GrpcError(Code.FailedPrecondition, "etcdserver: bad leader transferee");
    },
    // The store's journal compacted into a snapshot now (etcd rewrites its
    // bolt file): answered once it is done, as etcd's is, or with its error.
    async Defragment() {
      const t0 = performance.now();
      stats.defragging++;
      try {
        await store?.compactFrom(lessor, { force: true });
      } finally {
        stats.defragging--;
      }
      stats.defrag.observe(secondsSince(t0));
      // (etcd 3.4's answer has no header.)
      return {};
    },
  };
}

// A snapshot source's file bytes, however they come, in pieces of exactly
// SNAPSHOT_CHUNK bytes (the last one shorter), as etcd sends them; its
// other messages as they are.
async function* evenly(source) {
  let carry = new Uint8Array(0);
  for await (const m of source) {
    if (!(m instanceof Uint8Array)) {
      if (m.sha256 && carry.length > 0) {
        yield carry;
        carry = new Uint8Array(0);
      }
      yield m;
      continue;
    }
    let at = 0;
    if (carry.length > 0) {
      at = Math.min(m.length, SNAPSHOT_CHUNK - carry.length);
      const joined = new Uint8Array(carry.length + at);
      joined.set(carry);
      joined.set(m.subarray(0, at), carry.length);
      carry = joined;
      if (carry.length < SNAPSHOT_CHUNK) continue;
      yield carry;
    }
    for (; at + SNAPSHOT_CHUNK <= m.length; at += SNAPSHOT_CHUNK) yield m.subarray(at, at + SNAPSHOT_CHUNK);
    carry = m.slice(at);
  }
  if (carry.length > 0) yield carry; // (a source that gave no SHA-256)
}
