// etcdserverpb.Lease: the engine's lessor, with etcd's ids and errors.
import { checkSize, engine, leaseIn, leaseOut } from "./common.mjs";

const id = (v) => leaseIn(v) ?? 0n;

export function leaseService({ lessor, header, stats }) {
  return {
    LeaseGrant(req, call) {
      checkSize(call);
      const want = leaseIn(req.ID);
      const g = engine(() => lessor.grant(Number(req.TTL ?? 0), want === null ? {} : { id: want }));
      stats.leaseTtl.observe(g.ttl);
      return { header: header(), ID: leaseOut(g.id), TTL: g.ttl };
    },

    LeaseRevoke(req, call) {
      checkSize(call);
      const r = engine(() => lessor.revoke(id(req.ID)));
      return { header: { ...header(), revision: r.revision } };
    },

    // A stream: one answer per request. An unknown lease is TTL 0, not an
    // error, and the stream goes on (etcd's LeaseKeepAlive).
    LeaseKeepAlive: {
      each(req) {
        let ttl = 0;
        try {
          ttl = engine(() => lessor.renew(id(req.ID)));
        } catch (e) {
          if (e.code !== 5) throw e; // NotFound
        }
        return { header: header(), ID: String(req.ID ?? "0"), TTL: ttl };
      },
    },

    LeaseTimeToLive(req) {
      // Bytes: a key attached to a lease need not be UTF-8.
      const t = engine(() => lessor.timeToLive(id(req.ID), { keys: Boolean(req.keys), bytes: true }));
      if (t.ttl === -1) return { header: header(), ID: String(req.ID ?? "0"), TTL: -1 };
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
