// Backend entries (bytes) as the user's entries: the engine's shape
// ({ key, value, lease, createRevision, modRevision, version }) with keys and
// values as strings (UTF-8), or as Uint8Array when the call asked for bytes.

import { toText } from "./codec.mjs";

export function entryOut(kv, bytes) {
  return {
    key: bytes ? kv.key : toText(kv.key),
    value: bytes ? kv.value : toText(kv.value),
    lease: kv.lease,
    createRevision: kv.createRevision,
    modRevision: kv.modRevision,
    version: kv.version,
  };
}

export const rangeOut = (r, bytes) => ({
  kvs: r.kvs.map((kv) => entryOut(kv, bytes)),
  more: r.more,
  count: r.count,
  revision: r.revision,
});

export function putOut(r, bytes) {
  const out = { revision: r.revision };
  if (r.prev) out.prev = entryOut(r.prev, bytes);
  return out;
}

export const deleteRangeOut = (r, bytes) => ({
  deleted: r.deleted,
  revision: r.revision,
  prev: r.prev.map((kv) => entryOut(kv, bytes)),
});

export function txnOut(r, bytes) {
  return {
    succeeded: r.succeeded,
    revision: r.revision,
    responses: r.responses.map((x) => {
      if (x.range) return { range: rangeOut(x.range, bytes) };
      if (x.put) return { put: putOut(x.put, bytes) };
      if (x.deleteRange) return { deleteRange: deleteRangeOut(x.deleteRange, bytes) };
      return { txn: txnOut(x.txn, bytes) };
    }),
  };
}
