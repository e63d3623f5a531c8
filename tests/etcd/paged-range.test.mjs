// etcd/services/paged-range.mjs on a fake engine: a lease deadline that
// passes between the pages (a key of it could be hidden in some pages and
// not others) makes the answer one read; otherwise the pages put together.
import { test } from "node:test";
import assert from "node:assert/strict";
import { pagedRange } from "../../etcd/services/paged-range.mjs";

const enc = (s) => new TextEncoder().encode(s);
const KEYS = Array.from({ length: 2500 }, (_, i) => enc(`k${String(i).padStart(5, "0")}`));
const cmp = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));

// A keyspace of 2,500 keys at revision 7; `reads` records each request.
function fakeEngine() {
  const reads = [];
  const read = (q) => {
    reads.push(q);
    const all = KEYS.filter((k) => cmp(k, q.key) >= 0 && cmp(k, q.rangeEnd) < 0);
    const kvs = (q.limit ? all.slice(0, q.limit) : all).map((key) => ({ key, value: enc("v") }));
    return { kvs, more: q.limit > 0 && all.length > q.limit, count: all.length, revision: 7 };
  };
  return { read, reads };
}

const request = { key: enc("k"), rangeEnd: enc("l"), revision: 0, limit: 0, sortOrder: "none", sortTarget: "key", countOnly: false };

test("pages put together: every key once, in order, with the first page's count", async () => {
  const { read, reads } = fakeEngine();
  const r = await pagedRange(read, request, () => Date.now() + 60_000);
  assert.equal(r.kvs.length, KEYS.length);
  assert.equal(r.count, KEYS.length);
  assert.equal(r.more, false);
  assert.ok(reads.length >= 3, "read in pages");
  assert.ok(reads.every((q) => q.limit > 0), "no read of the whole range");
});

test("a lease deadline passed while paging: one read of the whole range instead", async () => {
  const { read, reads } = fakeEngine();
  const r = await pagedRange(read, request, () => Date.now() - 1);
  assert.equal(r.kvs.length, KEYS.length);
  assert.deepEqual(reads.at(-1), request, "the answer is one read of the request as asked");
});
