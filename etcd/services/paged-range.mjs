// A large Range read in steps, so other clients' calls are answered between
// them: built in one go, a Range over a large keyspace held the event loop
// for seconds (etcd serves it from a read transaction beside the others).
// The pages are read at the first one's revision, in key order, each
// starting just past the last key read, and the answer is theirs put
// together: the same keys, count and `more` as one read at that revision.
// At the current revision a key whose lease has just expired is hidden at
// once, while history shows it until its revoke: a lease whose deadline
// passes between the pages could show in some and not others, so then the
// answer is one read instead.

// Keys a page holds at most, and the bytes of values it aims at (its size
// follows the values read so far).
const PAGE_KEYS = 1000;
const PAGE_BYTES = 1 << 20;

// One event-loop turn (setImmediate on Node; a Worker has only timers).
const later = globalThis.setImmediate ?? ((fn) => setTimeout(fn, 0));
const turn = () => new Promise((ok) => later(ok));

/** Whether `q` (the engine's range request) reads its keys in key order, unfiltered: only then can pages make its answer. */
function pageable(q) {
  const keyOrder = q.sortOrder === "none" || (q.sortOrder === "ascend" && q.sortTarget === "key");
  const filtered = q.minModRevision || q.maxModRevision || q.minCreateRevision || q.maxCreateRevision;
  return keyOrder && !filtered && !q.countOnly && q.rangeEnd !== undefined && (q.limit === 0 || q.limit > PAGE_KEYS);
}

/** The key just after `key`. */
function after(key) {
  const next = new Uint8Array(key.length + 1);
  next.set(key);
  return next;
}

/**
 * `read(q)` (one engine range) for request `q`; one read when it is small
 * or not pageable, else a promise of the pages put together. A page that
 * fails (its revision compacted meanwhile) makes the answer one read, at
 * the current revision.
 */
export function pagedRange(read, q, nextDeadline = () => null) {
  if (!pageable(q)) return read(q);
  const due = nextDeadline(); // the earliest lease deadline, epoch ms (null: none)
  const first = read({ ...q, limit: PAGE_KEYS });
  // (q.limit is 0 or more than a page: one page holding all is the answer.)
  if (!first.more) return first;
  return rest(read, q, first, due);
}

async function rest(read, q, first, due) {
  const want = q.limit > 0 ? q.limit : Infinity;
  // The answer's revision is the store's at the first page (etcd's header);
  // the keys are those at the revision asked for, or that one.
  const revision = q.revision > 0 ? q.revision : first.revision;
  const kvs = [...first.kvs];
  let last = first;
  let bytes = 0;
  for (const e of first.kvs) bytes += e.value.length + e.key.length;
  while (last.more && kvs.length < want) {
    await turn();
    const size = Math.max(16, Math.min(PAGE_KEYS, Math.floor((PAGE_BYTES * kvs.length) / Math.max(1, bytes))));
    try {
      last = read({ ...q, key: after(kvs[kvs.length - 1].key), revision, limit: Math.min(size, want - kvs.length) });
    } catch {
      return read(q);
    }
    for (const e of last.kvs) {
      kvs.push(e);
      bytes += e.value.length + e.key.length;
    }
  }
  // A deadline passed meanwhile: a key may have been hidden in some pages only.
  if (due !== null && Date.now() >= due) return read(q);
  return { kvs, more: last.more, count: first.count, revision: first.revision };
}
