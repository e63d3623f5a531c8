// IndexedDB storage for edge-lease in browsers and workers.
//
// The lessor hands over one batch per committed operation; each batch is
// applied in one readwrite transaction, so an operation is stored whole or
// not at all. write() returns a promise: the lessor sends batches one at a
// time, in order, and `lessor.flush()` resolves once every transaction has
// committed. Every failure, including writing after close(), is reported
// through that promise, so a lessor whose store stopped working fails with
// "StorageFailed" instead of running ahead of what is stored.

const OBJECT_STORE = "entries";

function settle(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function factory(options) {
  const idb = options.indexedDB ?? globalThis.indexedDB;
  if (!idb) throw new Error("IndexedDB is not available in this environment");
  return idb;
}

function checkName(name) {
  if (typeof name !== "string" || name === "") {
    throw new TypeError("the database name must be a non-empty string");
  }
}

export class IndexedDbStore {
  #name;
  #db;
  #loaded;
  #durability;
  #closedWhy = null;

  /** Use `IndexedDbStore.open(name)`. */
  constructor(name, db, loaded, durability) {
    this.#name = name;
    this.#db = db;
    this.#loaded = loaded;
    this.#durability = durability;
    // Another connection wants to delete or upgrade the database (another
    // tab, or IndexedDbStore.delete): step aside rather than block it. Later
    // writes reject, which fails the lessor, as they must: its store is gone.
    db.onversionchange = () => this.#shut("another connection deleted or upgraded the database");
    // The browser closed the connection (storage cleared, disk error).
    db.onclose = () => this.#shut("the browser closed the database connection");
  }

  /**
   * Opens (creating if needed) the database `name` and loads every stored
   * entry for `entries()`. Options: `durability` ("strict" by default: a
   * write resolves once the data is on disk; "relaxed" trades that for
   * speed), `indexedDB` (another IDBFactory).
   */
  static async open(name, options = {}) {
    checkName(name);
    const durability = options.durability ?? "strict";
    if (durability !== "strict" && durability !== "relaxed") {
      throw new TypeError('durability must be "strict" or "relaxed"');
    }
    const req = factory(options).open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(OBJECT_STORE);
    const db = await settle(req);
    try {
      // Both lists come from one transaction, in the same key order.
      const os = db.transaction(OBJECT_STORE, "readonly").objectStore(OBJECT_STORE);
      const [keys, values] = await Promise.all([settle(os.getAllKeys()), settle(os.getAll())]);
      const loaded = keys.map((k, i) => [k, values[i]]);
      return new IndexedDbStore(name, db, loaded, durability);
    } catch (e) {
      db.close();
      throw e;
    }
  }

  /** Deletes the database `name`; stores open on it close themselves first. */
  static async delete(name, options = {}) {
    checkName(name);
    await settle(factory(options).deleteDatabase(name));
  }

  get name() {
    return this.#name;
  }

  /** Whether the store still accepts writes. */
  get isOpen() {
    return this.#db !== null;
  }

  /** The `[key, Uint8Array]` entries stored when the store was opened: pass them as `restore`. */
  entries() {
    return this.#loaded;
  }

  /** Applies `{ put: [[key, value]], delete: [key] }` in one transaction. */
  write(batch) {
    return new Promise((resolve, reject) => {
      if (this.#db === null) {
        throw new Error(`IndexedDbStore "${this.#name}" is closed: ${this.#closedWhy}`);
      }
      const tx = this.#db.transaction(OBJECT_STORE, "readwrite", { durability: this.#durability });
      // A failed request aborts the transaction, so abort covers every error.
      tx.oncomplete = () => resolve();
      tx.onabort = () => reject(tx.error ?? new Error("the IndexedDB transaction was aborted"));
      try {
        const os = tx.objectStore(OBJECT_STORE);
        // The lessor never puts and deletes the same key in one batch.
        for (const [key, value] of batch.put) os.put(value, key);
        for (const key of batch.delete) os.delete(key);
      } catch (e) {
        // A request refused synchronously: do not commit the rest.
        tx.abort();
        throw e;
      }
    });
  }

  /** Closes the connection; later writes reject. */
  close() {
    this.#shut("close() was called");
  }

  #shut(why) {
    if (this.#db === null) return;
    this.#db.close();
    this.#db = null;
    this.#closedWhy = why;
  }
}

export default IndexedDbStore;
