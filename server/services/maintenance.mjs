// etcdserverpb.Maintenance: Status, HashKV, Alarm (never raised here) and
// Defragment (compacts the file store's journal into its snapshot).
import { Etcd, unimplemented } from "../errors.mjs";
import { SERVER_VERSION, engine, int } from "./common.mjs";
import { hashKv } from "./hashkv.mjs";

export function maintenanceService({ lessor, store, member, header }) {
  // etcd's dbSize is its backend file's size (which Defragment shrinks) and
  // dbSizeInUse what its data takes there. Here: the file store's journal
  // and snapshot, and the engine's data as the quota counts it (O(1)) with
  // the live journal's header, never more than is on disk; neither is ever
  // 0, as etcd's never are. Without a file store, the data alone.
  const sizes = () => {
    const data = lessor.sizeBytes;
    const files = store?.sizes;
    if (!files) return [data, data];
    const onDisk = files.journal + files.snapshot;
    return [onDisk, Math.min(onDisk, data + files.header)];
  };
  return {
    Status() {
      const [dbSize, dbSizeInUse] = sizes();
      // No raft here: the applied index is the revision, the term fixed.
      return {
        header: header(),
        version: SERVER_VERSION,
        dbSize,
        leader: member.id,
        raftIndex: lessor.revision,
        raftTerm: member.raftTerm,
        raftAppliedIndex: lessor.revision,
        dbSizeInUse,
      };
    },
    Alarm(req) {
      const action = req.action ?? "GET";
      if (action === "ACTIVATE") throw unimplemented("raising alarms");
      // etcd answers a GET from the member's alarm store, with no header.
      return action === "GET" ? {} : { header: header() };
    },
    // etcd's: refused at or before the compaction point; a negative
    // revision hashes no version at all.
    async HashKV(req) {
      const rev = int(req.revision);
      const compacted = lessor.compactRevision;
      if (rev > 0 && rev <= compacted) throw Etcd.compacted();
      if (rev > lessor.revision) throw Etcd.futureRev();
      const head = header();
      const versions = engine(() => lessor.versions(rev === 0 ? lessor.revision : rev));
      return { header: head, hash: await hashKv(versions, compacted), compact_revision: compacted };
    },
    Defragment() {
      store?.compactFrom(lessor, { force: true });
      return { header: header() };
    },
  };
}
