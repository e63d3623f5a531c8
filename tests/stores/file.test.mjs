// The storage contract (contract.mjs) for the Node file store, fsync per
// write and with group commit (a pipelined store).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileStore } from "edge-lease/stores/file";
import { storeContract } from "./contract.mjs";

function fileFactory(options) {
  let dir = null;
  let store = null;
  return {
    async open() {
      dir = mkdtempSync(join(tmpdir(), "edge-lease-contract-"));
      store = FileStore.open(dir, options);
      return store;
    },
    async reopen() {
      await store.close();
      store = FileStore.open(dir, options);
      return store;
    },
    async close() {
      await store?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      store = dir = null;
    },
  };
}

storeContract("file store", fileFactory({}));
storeContract("file store, group commit", fileFactory({ groupCommit: true }));
