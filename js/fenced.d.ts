// Types for edge-lease/fenced.
import type { Lessor } from "./index.js";

/** What a Durable Object's `state.storage` offers that a fence uses (structural: no Workers types needed). */
export interface FenceStorage {
  get(key: string): Promise<unknown>;
  put(key: string, value: number): Promise<void>;
  transaction(closure: (txn: any) => Promise<unknown>): Promise<unknown>;
}

/**
 * A resource's fence: the highest fencing token (a lock's `token`) it has
 * accepted. Writes with a lower token are refused; writes on one fence run
 * one at a time.
 */
export interface Fence {
  readonly name: string;
  /** The highest token accepted so far; 0 before the first write. */
  highest(): Promise<number>;
  /**
   * Runs `fn(token)` if `token` is at least the highest accepted so far,
   * recording it first (durably, where the store is). Otherwise rejects with
   * a LeaseError `StaleToken` (with `token` and `highest`) and runs nothing.
   * A token lower than 1 or not an integer: `InvalidArgument`.
   */
  write<T>(token: number, fn: (token: number) => T | PromiseLike<T>): Promise<Awaited<T>>;
}

/**
 * The fence `name` kept in `store`: a Map (in memory), a Lessor (as the key
 * `name`, durable through the lessor's store), or a Durable Object's
 * `state.storage` (as the storage key `name`).
 */
export function fenced(store: Map<string, unknown> | Lessor | FenceStorage, name: string): Fence;
