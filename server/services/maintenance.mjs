// etcdserverpb.Maintenance: Status, Alarm (never raised here) and
// Defragment (compacts the file store's journal into its snapshot).
import { unimplemented } from "../errors.mjs";
import { SERVER_VERSION } from "./common.mjs";

export function maintenanceService({ lessor, store, member, header }) {
  // What the engine holds (keys, values, history), kept as it changes: O(1).
  const dbSize = () => lessor.sizeBytes;
  return {
    Status() {
      const size = dbSize();
      // No raft here: the applied index is the revision, the term fixed.
      return {
        header: header(),
        version: SERVER_VERSION,
        dbSize: size,
        leader: member.id,
        raftIndex: lessor.revision,
        raftTerm: member.raftTerm,
        raftAppliedIndex: lessor.revision,
        dbSizeInUse: size,
      };
    },
    Alarm(req) {
      const action = req.action ?? "GET";
      if (action === "ACTIVATE") throw unimplemented("raising alarms");
      // etcd answers a GET from the member's alarm store, with no header.
      return action === "GET" ? {} : { header: header() };
    },
    Defragment() {
      store?.compactFrom(lessor, { force: true });
      return { header: header() };
    },
  };
}
