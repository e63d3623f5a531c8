// Types for `edge-lease/stores/indexeddb`.
import type { Batch, Storage } from "../index.js";

export interface IndexedDbStoreOptions {
  /**
   * "strict" (default): a write resolves once the transaction is on disk.
   * "relaxed": it may resolve before, faster but losable on a power cut.
   */
  durability?: "strict" | "relaxed";
  /** The IDBFactory to use; default `globalThis.indexedDB`. */
  indexedDB?: IDBFactory;
}

/** Lessor storage in one IndexedDB object store; one transaction per batch. */
export class IndexedDbStore implements Storage {
  private constructor();
  /** Opens or creates the database and loads every stored entry. */
  static open(name: string, options?: IndexedDbStoreOptions): Promise<IndexedDbStore>;
  /** Deletes the database; stores open on it close themselves first. */
  static delete(name: string, options?: Pick<IndexedDbStoreOptions, "indexedDB">): Promise<void>;
  readonly name: string;
  /** False after close(), or after another connection deleted or upgraded the database. */
  readonly isOpen: boolean;
  /** The entries stored when the store was opened: pass them as the lessor's `restore`. */
  entries(): [string, Uint8Array][];
  /** Resolves when the batch's transaction commits; rejects if it aborts or the store is closed. */
  write(batch: Batch): Promise<void>;
  close(): void;
}

export default IndexedDbStore;
