// Work over the whole history done off the event loop: a worker thread
// reads the store's files as they are when the call comes (FileStore.view,
// which the server opens for it), restores an engine from them, and does
// there what would otherwise stop the server for as long as the data is
// large: etcd's snapshot file, sent back in pieces with its SHA-256
// (`storeSnapshot`), or etcd's HashKV (`storeHashKv`). The worker's memory
// goes when it ends. This module is both: the sources on the server, the
// work in the worker.
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { createHash } from "node:crypto";
import { once } from "node:events";

// Pieces the worker sends ahead of the one being read.
const AHEAD = 2;
const PIECE = 1 << 20;

/**
 * A Maintenance `snapshot` source for a server on `store` (a FileStore):
 * `(alarms, signal) => async iterable` of `{ size }`, the file's pieces,
 * then `{ sha256 }`; it ends early once `signal` aborts (the client went
 * away). `engine`: the lessor options the server's engine has (its limits),
 * for the copy restored in the worker.
 */
export function storeSnapshot(store, engine) {
  return async function* snapshot(alarms, signal, heldSince = null) {
    const view = store.view();
    const queue = [];
    let wake = null;
    let failed = null;
    let ended = false;
    const nudge = () => wake?.();
    signal?.addEventListener("abort", nudge);
    let worker = null;
    try {
      worker = new Worker(new URL(import.meta.url), { workerData: { files: view.files, engine, alarms, heldSince } });
      worker.on("message", (m) => {
        // The worker has read the files: a compaction may take them now.
        if (m.read) view.close();
        else queue.push(m);
        nudge();
      });
      worker.on("error", (e) => {
        failed ??= e;
        nudge();
      });
      worker.on("exit", (code) => {
        ended = true;
        if (code !== 0) failed ??= new Error(`edge-lease: the snapshot's worker exited with code ${code}`);
        nudge();
      });
      for (;;) {
        while (queue.length === 0 && !failed && !ended && !signal?.aborted) await new Promise((ok) => (wake = ok));
        wake = null;
        if (signal?.aborted) return;
        const m = queue.shift();
        if (!m) throw failed ?? new Error("edge-lease: the snapshot's worker ended before the file did");
        if (m.error) throw new Error(`edge-lease: the snapshot could not be built: ${m.error}`);
        if (m.piece) {
          worker.postMessage("more");
          yield m.piece;
        } else {
          yield m;
          if (m.sha256) return;
        }
      }
    } finally {
      signal?.removeEventListener("abort", nudge);
      if (worker && !ended) await worker.terminate();
      view.close();
    }
  };
}

/**
 * A Maintenance `hashKv` source for a server on `store` (a FileStore):
 * `(upto, signal) => Promise<{ hash, compactRevision }>`, etcd's HashKV at
 * revision `upto` of the store's durable state (so every write up to
 * `upto` must be durable first); it rejects with the engine's error (code
 * "Compacted" if a compaction took `upto`), or once `signal` aborts. One
 * at a time: a call waits for the one before it, so callers cannot pile
 * engines up.
 */
export function storeHashKv(store, engine) {
  let last = Promise.resolve();
  return (upto, signal) => {
    const run = last.then(() => hashKvOnce(store, engine, upto, signal));
    last = run.catch(() => {});
    return run;
  };
}

async function hashKvOnce(store, engine, upto, signal) {
  signal?.throwIfAborted();
  const view = store.view();
  let worker = null;
  let abort = null;
  try {
    worker = new Worker(new URL(import.meta.url), { workerData: { files: view.files, engine, hashKv: upto } });
    return await new Promise((resolve, reject) => {
      abort = () => reject(signal.reason ?? new Error("edge-lease: HashKV cancelled"));
      signal?.addEventListener("abort", abort);
      worker.on("message", (m) => {
        if (m.read) view.close();
        else if (m.error) reject(Object.assign(new Error(m.error), { code: m.code }));
        else resolve(m.hashKv);
      });
      worker.on("error", reject);
      worker.on("exit", (code) => reject(new Error(`edge-lease: the HashKV worker exited with code ${code}`)));
    });
  } finally {
    if (abort) signal?.removeEventListener("abort", abort);
    if (worker) await worker.terminate();
    view.close();
  }
}

// An engine restored from the store's files, their long values read from
// them as the engine takes each entry (so they are held once, in the
// engine); `read` is posted once it is made, so the server can let the
// files go.
async function restoreFrom(files, engine) {
  const [{ Lessor }, { readView }] = await Promise.all([import("./engine.mjs"), import("edge-lease/stores/file")]);
  const lessor = new Lessor({ ...engine, autoTick: false, restore: readView(files) });
  parentPort.postMessage({ read: true });
  return lessor;
}

async function hashKv({ files, engine, hashKv: upto }) {
  const lessor = await restoreFrom(files, engine);
  try {
    parentPort.postMessage({ hashKv: { hash: lessor.hashKv(upto), compactRevision: lessor.compactRevision } });
  } catch (e) {
    parentPort.postMessage({ error: e.message, code: e.code });
  } finally {
    lessor.close();
  }
}

async function build({ files, engine, alarms, heldSince }) {
  const { etcdSnapshot } = await import("../etcd/services/snapshot.mjs");
  const lessor = await restoreFrom(files, engine);
  try {
    // The server's leases held past their deadline (CORRUPT) are its
    // engine's to give, with their keys.
    if (heldSince !== null && heldSince !== undefined) lessor.holdExpiry(true, { since: heldSince });
    // (The history is read from the engine as the pieces are written: one
    // copy of it, not two.)
    const file = etcdSnapshot(lessor, alarms);
    parentPort.postMessage({ size: file.size });
    const hash = createHash("sha256");
    let credit = AHEAD;
    const more = () => credit++;
    parentPort.on("message", more);
    for (const piece of file.pieces(PIECE)) {
      while (credit === 0) await once(parentPort, "message");
      credit--;
      hash.update(piece);
      parentPort.postMessage({ piece }, [piece.buffer]);
    }
    parentPort.off("message", more); // (so that the worker can end)
    parentPort.postMessage({ sha256: new Uint8Array(hash.digest()) });
  } finally {
    lessor.close();
  }
}

if (!isMainThread && workerData?.files) {
  (workerData.hashKv !== undefined ? hashKv : build)(workerData).catch((e) => {
    parentPort.postMessage({ error: e.message });
    process.exitCode = 1;
  });
}
