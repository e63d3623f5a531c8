// etcd's snapshot file built off the event loop: a worker thread reads the
// store's files as they are when the snapshot starts (FileStore.view, which
// the server opens for it), restores an engine from them, and sends the file
// back in pieces with its SHA-256. The server goes on answering meanwhile,
// whatever the data's size, and the worker's memory goes when it ends.
// This module is both: `storeSnapshot` on the server, the build in the worker.
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
  return async function* snapshot(alarms, signal) {
    const view = store.view();
    const queue = [];
    let wake = null;
    let failed = null;
    let ended = false;
    const nudge = () => wake?.();
    signal?.addEventListener("abort", nudge);
    let worker = null;
    try {
      worker = new Worker(new URL(import.meta.url), { workerData: { files: view.files, engine, alarms } });
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

async function build({ files, engine, alarms }) {
  const [{ Lessor }, { readView }, { etcdSnapshot }] = await Promise.all([
    import("../js/node.mjs"),
    import("../js/stores/file.mjs"),
    import("./services/snapshot.mjs"),
  ]);
  // (In a function of its own, so that the entries read go with it.)
  const restore = () => {
    const entries = readView(files);
    parentPort.postMessage({ read: true });
    return new Lessor({ ...engine, autoTick: false, restore: entries });
  };
  const lessor = restore();
  try {
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
  build(workerData).catch((e) => {
    parentPort.postMessage({ error: e.message });
    process.exitCode = 1;
  });
}
