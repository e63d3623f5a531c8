// etcdserverpb.Maintenance: Status, HashKV, Alarm (alarms.mjs), Snapshot
// (snapshot.mjs: etcd's backend file, which etcd can restore) and
// Defragment (compacts the file store's journal into its snapshot).
import { SERVER_VERSION, dbSizes, engine, int } from "./common.mjs";
import { alarmRpc } from "./alarms.mjs";
import { etcdSnapshot } from "./snapshot.mjs";

// etcd sends its file in pieces of this size, then its SHA-256 (which
// `etcdctl snapshot restore` checks); no header.
const SNAPSHOT_CHUNK = 32 * 1024;

export function maintenanceService({ lessor, store, member, header, alarms }) {
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
        const file = etcdSnapshot(lessor, alarms.get("NONE"));
        for (let at = 0; at < file.length; at += SNAPSHOT_CHUNK) {
          const blob = file.subarray(at, at + SNAPSHOT_CHUNK);
          yield { remaining_bytes: String(file.length - at - blob.length), blob };
        }
        yield { remaining_bytes: "0", blob: new Uint8Array(await crypto.subtle.digest("SHA-256", file)) };
      },
    },
    Defragment() {
      store?.compactFrom(lessor, { force: true });
      return { header: header() };
    },
  };
}
