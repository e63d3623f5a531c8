// v3electionpb.Election as etcd 3.4's v3election server does it
// (concurrency.Election run server-side, see concurrency.mjs). Candidates
// are keys `name/<lease %x>`; the leader is the oldest. Campaign blocks until
// its key is the oldest (a canceled Campaign resigns); Proclaim and Resign
// act on a LeaderKey only while its key still has the same create revision;
// Observe streams the leader's value each time it changes. Each step is
// checked with the caller's token, as on etcd (concurrency.mjs's steps): a
// step refused ends Observe's stream, as any error there does on etcd.
import { GrpcError, Code } from "../errors.mjs";
import { bytesOf, isEngineFailure, kvOut } from "./common.mjs";
import { admitRecipe, canceled, created, firstCreate, keyUnder, prefixEnd, recipe, session, steps, waitDeletes, watchQueue } from "./concurrency.mjs";
import { leaseGoHex } from "edge-lease/lease-id";

const notLeader = () => new GrpcError(Code.Unknown, "election: not leader");
const noLeader = () => new GrpcError(Code.Unknown, "election: no leader");
// v3election.ErrMissingLeaderKey
const missingLeader = () => new GrpcError(Code.Unknown, '"leader" field must be provided');

const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const int = (v) => Number(v ?? 0);

export function electionService({ lessor, header, auth, maxRequestBytes }) {
  const at = (revision) => ({ ...header(), revision });

  /** Election.Proclaim: put the value if the key is still the one elected. */
  function proclaim(step, key, rev, lease, value) {
    admitRecipe(maxRequestBytes, step, { key, value, lease, rev });
    const r = recipe(() =>
      lessor.txn({ compare: [created(key, rev)], success: [{ put: { key, value, lease } }] }),
    );
    if (!r.succeeded) throw notLeader();
    return r.revision;
  }

  /** Election.Resign: delete the key if it is still the one elected. */
  function resign(step, key, rev) {
    step.as("etcdserverpb.KV/Txn", { compare: [{ key, target: "CREATE", create_revision: String(rev) }], success: [{ request_delete_range: { key } }] });
    return recipe(() => lessor.txn({ compare: [created(key, rev)], success: [{ deleteRange: { key } }] })).revision;
  }

  /** Election.Leader: the oldest key under `pfx`, with the read's revision. */
  function leader(step, pfx) {
    step.as("etcdserverpb.KV/Range", { key: pfx, range_end: prefixEnd(pfx) });
    const r = recipe(() => lessor.range(firstCreate(pfx)));
    return { revision: r.revision, kv: r.kvs[0] };
  }

  /** concurrency.Election.observe, as an async generator of LeaderResponses. */
  async function* observe(step, pfx, signal) {
    for (;;) {
      if (signal?.aborted) return;
      let revision, kv;
      try {
        ({ revision, kv } = leader(step, pfx));
      } catch (e) {
        // (etcd's observe ends on a failed read; a failed engine is the host's to hear.)
        if (isEngineFailure(e)) throw e;
        return;
      }
      if (!kv) {
        // Wait for the first put under the prefix (a delete would spin).
        let q;
        try {
          step.watch(pfx, prefixEnd(pfx));
          q = watchQueue(lessor, { key: pfx, prefix: true, startRevision: revision }, signal);
          while (!kv) {
            const batch = await q.next();
            kv = batch.events.find((e) => e.type === "put")?.kv;
          }
        } catch {
          return; // the watch ended: the stream does too
        } finally {
          q?.cancel();
        }
        revision = kv.modRevision;
      }
      yield { header: at(revision), kv: kvOut(kv) };
      // Every new value of that key, until it is deleted.
      let q;
      try {
        step.watch(kv.key);
        q = watchQueue(lessor, { key: kv.key, startRevision: revision + 1 }, signal);
        for (let deleted = false; !deleted; ) {
          const batch = await q.next();
          for (const e of batch.events) {
            if (e.type === "delete") {
              deleted = true;
              break;
            }
            yield { header: at(batch.revision), kv: kvOut(e.kv) };
          }
        }
      } catch {
        return;
      } finally {
        q?.cancel();
      }
    }
  }

  return {
    async Campaign(req, call) {
      const signal = call?.signal;
      if (signal?.aborted) throw canceled();
      const step = steps(auth, call?.token);
      const lease = session(lessor, req.lease, step);
      const name = bytesOf(req.name);
      const pfx = keyUnder(name);
      const key = keyUnder(name, leaseGoHex(lease));
      const value = bytesOf(req.value);
      admitRecipe(maxRequestBytes, step, { key, value, lease, failure: true });
      const r = recipe(() =>
        lessor.txn({
          compare: [created(key, 0)],
          success: [{ put: { key, value, lease } }],
          failure: [{ range: { key } }],
        }),
      );
      let rev = r.revision;
      if (!r.succeeded) {
        const kv = r.responses[0].range.kvs[0];
        rev = kv.createRevision;
        if (!sameBytes(kv.value, value)) {
          try {
            proclaim(step, key, rev, lease, value);
          } catch (e) {
            try {
              resign(step, key, rev);
            } catch {}
            throw e;
          }
        }
      }
      try {
        await waitDeletes(lessor, pfx, rev - 1, signal, step);
      } catch (e) {
        // Canceled: resign with the client's context (errors ignored).
        if (signal?.aborted) {
          try {
            resign(step.nobody, key, rev);
          } catch {}
        }
        throw e;
      }
      return {
        header: at(r.revision),
        leader: { name, key, rev, lease: lease.toString() },
      };
    },

    Proclaim(req, call) {
      if (!req.leader) throw missingLeader();
      const lease = session(lessor, req.leader.lease);
      return { header: at(proclaim(steps(auth, call?.token), bytesOf(req.leader.key), int(req.leader.rev), lease, bytesOf(req.value))) };
    },

    Leader(req, call) {
      const { revision, kv } = leader(steps(auth, call?.token), keyUnder(bytesOf(req.name)));
      if (!kv) throw noLeader();
      return { header: at(revision), kv: kvOut(kv) };
    },

    Observe: {
      stream(req, call) {
        return observe(steps(auth, call?.token), keyUnder(bytesOf(req.name)), call?.signal);
      },
    },

    Resign(req, call) {
      if (!req.leader) throw missingLeader();
      session(lessor, req.leader.lease);
      return { header: at(resign(steps(auth, call?.token), bytesOf(req.leader.key), int(req.leader.rev))) };
    },
  };
}
