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
 * `(alarms) => async iterable` of `{ size }`, the file's pieces, then
 * `{ sha256 }`. `engine`: the lessor options the server's engine has (its
 * limits), for the copy restored in the worker.
 */
export function storeSnapshot(store, engine) {
  return async function* snapshot(alarms) {
    const view = store.view();
    const worker = new Worker(new URL(import.meta.url), { workerData: { files: view.files, engine, alarms } });
    const queue = [];
    let wake = null;
    let failed = null;
    let ended = false;
    const push = (m) => {
      queue.push(m);
      wake?.();
    };
    worker.on("message", push);
    worker.on("error", (e) => {
      failed ??= e;
      wake?.();
    });
    worker.on("exit", (code) => {
      ended = true;
      if (code !== 0) failed ??= new Error(`edge-lease: the snapshot's worker exited with code ${code}`);
      wake?.();
    });
    try {
      for (;;) {
        while (queue.length === 0 && !failed && !ended) await new Promise((ok) => (wake = ok));
        wake = null;
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
      if (!ended) await worker.terminate();
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
  const lessor = new Lessor({ ...engine, autoTick: false, restore: readView(files) });
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
  lessor.close();
  parentPort.off("message", more); // (so that the worker can end)
  parentPort.postMessage({ sha256: new Uint8Array(hash.digest()) });
}

if (!isMainThread && workerData?.files) {
  build(workerData).catch((e) => {
    parentPort.postMessage({ error: e.message });
    process.exitCode = 1;
  });
}
