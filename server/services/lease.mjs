// etcdserverpb.Lease: the engine's lessor, with etcd's ids and errors.
import { checkSize, engine, etcdError, leaseIn, leaseOut } from "./common.mjs";

const id = (v) => leaseIn(v) ?? 0n;

const LOW_48 = (1n << 48n) - 1n;
const LOW_40 = (1n << 40n) - 1n;
const INT63 = (1n << 63n) - 1n;

/**
 * The ids the server picks, as etcd's member picks them (its request id
 * generator, pkg/idutil): the member id's low 16 bits, then the time the
 * server started in ms (40 bits) and a count (8 bits) that carries on into
 * the time. So ids grow, across restarts too, and keys named after them (a
 * lock's, an election's) list in grant order, as on etcd. `next()` gives
 * the next one (positive, never 0).
 */
export function leaseIds(memberId, now = Date.now()) {
  const prefix = (BigInt(memberId) & 0xffffn) << 48n;
  let suffix = (BigInt(now) & LOW_40) << 8n;
  return {
    next() {
      for (;;) {
        suffix += 1n;
        const id = (prefix | (suffix & LOW_48)) & INT63;
        if (id !== 0n) return id;
      }
    },
  };
}

// Ids taken by a client's own choice are skipped; after this many in a row
// the engine picks one (at random, within etcd's positive range).
const ID_TRIES = 16;

export function leaseService({ lessor, header, stats, alarms, member }) {
  const ids = leaseIds(member.id);
  const grantNew = (ttl) => {
    for (let i = 0; i < ID_TRIES; i++) {
      try {
        return lessor.grant(ttl, { id: ids.next() });
      } catch (e) {
        if (e?.code !== "LeaseExists") throw e;
      }
    }
    return lessor.grant(ttl);
  };
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
      checkSize(call);
      const want = leaseIn(req.ID);
      const ttl = Number(req.TTL ?? 0);
      const g = engine(() => (want === null ? grantNew(ttl) : lessor.grant(ttl, { id: want })));
      stats.leaseTtl.observe(g.ttl);
      return { header: header(), ID: leaseOut(g.id), TTL: g.ttl };
    },

    LeaseRevoke(req, call) {
      checkSize(call);
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
