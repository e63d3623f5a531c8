// etcdserverpb.Maintenance: Status, HashKV, Alarm (alarms.mjs), Snapshot
// (snapshot.mjs: etcd's backend file, which etcd can restore), MoveLeader
// (to itself) and Defragment (compacts the file store's journal into its
// snapshot).
import { Code, GrpcError } from "../errors.mjs";
import { SERVER_VERSION, dbSizes, engine, int } from "./common.mjs";
import { alarmRpc } from "./alarms.mjs";
import { etcdSnapshot } from "./snapshot.mjs";

// etcd sends its file in pieces of this size, then its SHA-256 (which
// `etcdctl snapshot restore` checks); no header.
const SNAPSHOT_CHUNK = 32 * 1024;
// A snapshot is built whole in memory (the engine's copy of its history,
// then the file) while the server waits, so it is bounded: by the data's
// size, so that it cannot run the engine out of memory nor hold the server
// long enough for kept-alive leases to expire (~0.4 s at 64 MiB here), and
// to one at a time, so that slow readers cannot pile copies up.
export const MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024;

/** `maxSnapshotBytes`: the most data a Snapshot is built from (a Worker's isolate has less memory). */
export function maintenanceService({ lessor, store, member, header, alarms, maxSnapshotBytes = MAX_SNAPSHOT_BYTES }) {
  let sending = false;
  const mb = (n) => (n / 2 ** 20).toFixed(1);
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
    HashKV(req) {
      const hash = engine(() => lessor.hashKv(int(req.revision)));
      return { header: header(), hash, compact_revision: lessor.compactRevision };
    },
    Snapshot: {
      async *stream() {
        if (lessor.sizeBytes > maxSnapshotBytes) {
          const why = `the data (${mb(lessor.sizeBytes)} MiB) is more than a snapshot is built from in memory (${mb(maxSnapshotBytes)} MiB): etcdctl make-mirror copies it instead`;
          throw new GrpcError(Code.ResourceExhausted, `edge-lease: ${why}`);
        }
        if (sending) throw new GrpcError(Code.Unavailable, "edge-lease: another snapshot is being sent: try again once it is done");
        sending = true;
        try {
          const file = etcdSnapshot(lessor, alarms.get("NONE"));
          for (let at = 0; at < file.length; at += SNAPSHOT_CHUNK) {
            const blob = file.subarray(at, at + SNAPSHOT_CHUNK);
            yield { remaining_bytes: String(file.length - at - blob.length), blob };
          }
          yield { remaining_bytes: "0", blob: new Uint8Array(await crypto.subtle.digest("SHA-256", file)) };
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
    Defragment() {
      store?.compactFrom(lessor, { force: true });
      return { header: header() };
    },
  };
}
