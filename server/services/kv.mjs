// etcdserverpb.KV over today's engine: single keys, prefix ranges and the
// whole keyspace (the engine's range(prefix)), at the current revision.
// Limits, counts, keys_only and the revision filters are applied here, as
// etcd's apply.go does. What needs the engine's MVCC (past revisions, other
// range_ends, sorting, Txn, Compact) answers Unimplemented: server/README.md.
import { Etcd, unimplemented } from "../errors.mjs";
import { bytesOf, checkSize, engine, keyOf, kvOut, leaseIn, text } from "./common.mjs";

/** etcd's GetPrefixRangeEnd: the key after every key starting with `key`. */
export function prefixEnd(key) {
  const end = Uint8Array.from(key);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Uint8Array.of(0); // all 0xff: no upper bound
}

const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The live entries [key, range_end) names, as far as the engine can say. */
function select(lessor, req) {
  const key = keyOf(req.key);
  const end = bytesOf(req.range_end);
  if (end.length === 0) {
    const e = lessor.get(key);
    return e ? [e] : [];
  }
  const start = bytesOf(req.key);
  // "\0".."\0" is every key ("get --prefix ''" sends it).
  if (equal(start, [0]) && equal(end, [0])) return lessor.range("");
  if (equal(end, prefixEnd(start))) return lessor.range(text(start));
  throw unimplemented("a range_end that is not the key's prefix end (arbitrary ranges and --from-key need the engine's range)");
}

const int = (v) => Number(v ?? 0);

export function kvService({ lessor, header }) {
  return {
    Range(req) {
      keyOf(req.key);
      const rev = int(req.revision);
      if (rev > lessor.revision) throw Etcd.futureRev();
      if (rev > 0 && rev < lessor.revision) throw unimplemented("reading at a past revision");
      const order = req.sort_order ?? "NONE";
      const target = req.sort_target ?? "KEY";
      if (!((order === "NONE" || order === "ASCEND") && target === "KEY")) {
        throw unimplemented("sorting by anything but ascending key");
      }
      const all = select(lessor, req);
      const resp = { header: header(), count: all.length };
      if (req.count_only) return resp;
      const [minMod, maxMod, minCreate, maxCreate] = [
        int(req.min_mod_revision),
        int(req.max_mod_revision),
        int(req.min_create_revision),
        int(req.max_create_revision),
      ];
      let kvs = all.filter(
        (e) =>
          !(maxMod && e.modRevision > maxMod) &&
          !(minMod && e.modRevision < minMod) &&
          !(maxCreate && e.createRevision > maxCreate) &&
          !(minCreate && e.createRevision < minCreate),
      );
      const limit = int(req.limit);
      if (limit > 0 && kvs.length > limit) {
        kvs = kvs.slice(0, limit);
        resp.more = true;
      }
      resp.kvs = kvs.map((e) => kvOut(e, req.keys_only));
      return resp;
    },

    Put(req, call) {
      const key = keyOf(req.key);
      checkSize(call);
      const value = bytesOf(req.value);
      if (req.ignore_value && value.length) throw Etcd.valueProvided();
      if (req.ignore_lease && leaseIn(req.lease) !== null) throw Etcd.leaseProvided();
      let lease = leaseIn(req.lease);
      let v = value;
      if (req.ignore_value || req.ignore_lease) {
        const prev = lessor.get(key);
        if (!prev) throw Etcd.keyNotFound();
        if (req.ignore_value) v = prev.value;
        if (req.ignore_lease) lease = prev.lease;
      }
      const r = engine(() => lessor.put(key, v, { lease, prevKv: Boolean(req.prev_kv) }));
      const resp = { header: { ...header(), revision: r.revision } };
      if (req.prev_kv && r.prev) resp.prev_kv = kvOut(r.prev);
      return resp;
    },

    DeleteRange(req, call) {
      keyOf(req.key);
      checkSize(call);
      const found = select(lessor, req);
      if (found.length === 0) return { header: header() }; // no revision bump, as etcd
      if (found.length > 1) throw unimplemented("deleting more than one key (one revision for all of them needs the engine's deleteRange)");
      const r = engine(() => lessor.delete(found[0].key, { prevKv: Boolean(req.prev_kv) }));
      const resp = { header: { ...header(), revision: r.revision }, deleted: r.deleted ? 1 : 0 };
      if (req.prev_kv && r.prev) resp.prev_kvs = [kvOut(r.prev)];
      return resp;
    },
  };
}
