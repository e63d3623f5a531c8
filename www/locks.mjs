// Which keys are locks or elections, and who owns them. etcd's concurrency
// recipes (Go's Mutex and Election, `etcdctl lock` and `elect`,
// edge-lease/client's mutex and election) put one key per contender at
// `name/<lease id in Go's %x>`; the contender with the smallest create
// revision owns the queue (holds the lock, or leads the election), the
// others wait in that order. A lock and an election write the same keys, so
// such a queue is labelled as either ("queue"): the page did not make them
// and cannot know which recipe did (a lock's value is empty and a
// candidate's is its proposal, but only by habit). A simpler lock (the
// page's story) is one key created only if absent: any key under the chosen
// prefix ("prefix"), a lock because the prefix says so. Either way the key's
// create revision is the owner's fencing token.

import { leaseGoHex, leaseInt64 } from "edge-lease/lease-id";

/** Go's `%x` of an int64 lease id given as 16 hex digits (negative ids print a minus). */
export const goHex = (id) => leaseGoHex(leaseInt64(id));

/**
 * Entries -> [{ name, kind ("queue" | "prefix"), key, token, lease, place }]
 * grouped by name (names in order), each group by create revision; place 0
 * owns it.
 */
export function lockRows(entries, prefix) {
  // A plain key under the prefix and a queue may share a name: kept apart.
  const groups = new Map(); // `${name}\0${kind}` -> { name, kind, entries }
  for (const e of entries) {
    let name = null;
    let kind = "queue";
    if (e.lease) {
      const suffix = "/" + goHex(e.lease);
      if (e.key.length > suffix.length && e.key.endsWith(suffix)) name = e.key.slice(0, -suffix.length);
    }
    if (name === null && prefix && e.key.startsWith(prefix)) {
      name = e.key;
      kind = "prefix";
    }
    if (name === null) continue;
    const id = `${name}\0${kind}`;
    if (!groups.has(id)) groups.set(id, { name, kind, entries: [] });
    groups.get(id).entries.push(e);
  }
  const rows = [];
  for (const id of [...groups.keys()].sort()) {
    const { name, kind, entries: group } = groups.get(id);
    group.sort((a, b) => a.createRevision - b.createRevision);
    group.forEach((e, place) => rows.push({ name, kind, key: e.key, token: e.createRevision, lease: e.lease, place }));
  }
  return rows;
}

/** What a row's State column says: a queue's first owns it, as a lock's holder or an election's leader. */
export function standing(r) {
  if (r.place > 0) return `waits (${ordinal(r.place + 1)} in line)`;
  return r.kind === "prefix" ? "holds" : "owner: holds or leads";
}

function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] ?? "th";
  return `${n}${s}`;
}
