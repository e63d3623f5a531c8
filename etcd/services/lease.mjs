// etcdserverpb.Lease: the engine's lessor, with etcd's ids and errors.
import { admission } from "../methods.mjs";
import { engine, etcdError, leaseIn, leaseOut } from "./common.mjs";

const id = (v) => leaseIn(v) ?? 0n;

export function leaseService({ lessor, header, stats, alarms, auth, maxRequestBytes }) {
  const limitGrant = admission("etcdserverpb.Lease/LeaseGrant", maxRequestBytes, auth);
  const limitRevoke = admission("etcdserverpb.Lease/LeaseRevoke", maxRequestBytes, auth);
  // A stream: one answer per request. An unknown lease is TTL 0, not an
  // error, and the stream goes on (etcd's LeaseKeepAlive). Past its
  // deadline while expiry is held (CORRUPT), etcd's renewal waits for the
  // revoke: the answer (TTL 0, the lease gone) comes once the alarm is
  // cleared, and the transports keep a stream's answers in order behind it.
  function keepAlive(req) {
    let ttl;
    try {
      ttl = lessor.renew(id(req.ID));
    } catch (e) {
      if (e?.code === "ExpiryHeld") return alarms.released().then(() => keepAlive(req));
      const mapped = etcdError(e);
      if (mapped.code !== 5) throw mapped; // NotFound
      ttl = 0;
    }
    return { header: header(), ID: String(req.ID ?? "0"), TTL: ttl };
  }

  return {
    LeaseGrant(req, call) {
      limitGrant(req, call);
      const want = leaseIn(req.ID);
      const g = engine(() => lessor.grant(Number(req.TTL ?? 0), want === null ? {} : { id: want }));
      stats.leaseTtl.observe(g.ttl);
      return { header: header(), ID: leaseOut(g.id), TTL: g.ttl };
    },

    LeaseRevoke(req, call) {
      limitRevoke(req, call);
      const r = engine(() => lessor.revoke(id(req.ID)));
      return { header: { ...header(), revision: r.revision } };
    },

    LeaseKeepAlive: {
      each: keepAlive,
    },

    LeaseTimeToLive(req) {
      // Bytes: a key attached to a lease need not be UTF-8.
      const t = engine(() => lessor.timeToLive(id(req.ID), { keys: Boolean(req.keys), bytes: true }));
      // (Unknown: TTL -1 and nothing more. A lease held past its deadline
      // has a TTL below zero too, and its granted TTL.)
      if (t.ttlMs === -1 && t.grantedTtl === 0) return { header: header(), ID: String(req.ID ?? "0"), TTL: -1 };
      return {
        header: header(),
        ID: String(req.ID ?? "0"),
        TTL: t.ttl,
        grantedTTL: t.grantedTtl,
        keys: req.keys ? t.keys : [],
      };
    },

    LeaseLeases() {
      return { header: header(), leases: lessor.leases().map((l) => ({ ID: leaseOut(l) })) };
    },
  };
}
