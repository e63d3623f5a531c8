// etcdserverpb.Cluster for a single-member cluster, with etcd's member and
// cluster ids (so `member list` prints what etcd would for the same flags).
import { Code, Etcd, GrpcError } from "../errors.mjs";

async function sha1First8(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-1", bytes));
  return new DataView(digest.buffer).getBigUint64(0);
}

/**
 * etcd's membership.computeMemberId (sorted peer URLs joined, then the
 * cluster token, SHA-1, first 8 bytes) and RaftCluster.genID (SHA-1 of the
 * sorted member ids). Decimal strings, as uint64s travel here.
 */
export async function memberIds(peerURLs, token) {
  const id = await sha1First8(new TextEncoder().encode([...peerURLs].sort().join("") + token));
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, id);
  return { id: id.toString(), clusterId: (await sha1First8(b)).toString() };
}

export function clusterService({ member, clusterHeader }) {
  const self = () => ({
    ID: member.id,
    name: member.name,
    peerURLs: member.peerURLs,
    clientURLs: member.clientURLs,
  });
  const single = () =>
    new GrpcError(Code.Unimplemented, "edge-lease: a single-member cluster; members cannot be added, removed or changed");
  const known = (req) => {
    if (String(req.ID ?? "0") !== member.id) throw Etcd.memberNotFound();
  };
  return {
    MemberList: () => ({ header: clusterHeader(), members: [self()] }),
    MemberAdd: () => {
      throw single();
    },
    MemberRemove(req) {
      known(req);
      throw single();
    },
    MemberUpdate(req) {
      known(req);
      // The peer URLs it has already (a script making sure of them): done,
      // as on etcd. Others would have to outlive a restart, which takes the
      // member from its flags.
      const same = (a, b) => a.length === b.length && a.every((u, i) => u === b[i]);
      if (!same([...(req.peerURLs ?? [])].sort(), [...member.peerURLs].sort())) throw single();
      return { header: clusterHeader(), members: [self()] };
    },
    MemberPromote(req) {
      known(req);
      throw new GrpcError(Code.FailedPrecondition, "etcdserver: can only promote a learner member");
    },
  };
}
