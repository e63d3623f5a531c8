// Which keys are locks, and who holds them. etcd's concurrency recipes
// (Go's Mutex and Election, `etcdctl lock` and `elect`, edge-lease/client's
// mutex) put one key per contender at `name/<lease id in Go's %x>`; the
// contender with the smallest create revision holds the lock, the others
// wait in that order. A simpler lock (the page's story) is one key created
// only if absent: any key under the chosen prefix. Either way the key's
// create revision is the holder's fencing token.

import { leaseGoHex, leaseInt64 } from "edge-lease/lease-id";

/** Go's `%x` of an int64 lease id given as 16 hex digits (negative ids print a minus). */
export const goHex = (id) => leaseGoHex(leaseInt64(id));

/**
 * Entries -> [{ name, key, token, lease, place }] grouped by lock name
 * (names in order), each group by create revision; place 0 holds.
 */
export function lockRows(entries, prefix) {
  const groups = new Map();
  for (const e of entries) {
    let name = null;
    if (e.lease) {
      const suffix = "/" + goHex(e.lease);
      if (e.key.length > suffix.length && e.key.endsWith(suffix)) name = e.key.slice(0, -suffix.length);
    }
    if (name === null && prefix && e.key.startsWith(prefix)) name = e.key;
    if (name === null) continue;
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push(e);
  }
  const rows = [];
  for (const name of [...groups.keys()].sort()) {
    const group = groups.get(name).sort((a, b) => a.createRevision - b.createRevision);
    group.forEach((e, place) => rows.push({ name, key: e.key, token: e.createRevision, lease: e.lease, place }));
  }
  return rows;
}

export function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] ?? "th";
  return `${n}${s}`;
}
