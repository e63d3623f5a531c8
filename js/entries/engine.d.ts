// edge-lease/engine: for a host that brings its own build of the engine
// (edge-lease-etcd's, with etcd's HashKV and snapshot file).
import type { Lessor } from "../index.js";

/** A wasm-bindgen module of crates/wasm whose wasm is instantiated (its `initSync` or default init has run). */
export interface EngineBuild {
  readonly RawLessor: unknown;
  readonly RawRestore: unknown;
  readonly Slot: Record<string, number>;
  readonly RangeRow: Record<string, number>;
  readonly RevokedRow: Record<string, number>;
  defaults(): Record<string, number>;
}

/** The Lessor class whose cores `engine` builds. */
export function lessorOver(engine: EngineBuild): typeof Lessor;

export { LeaseError, LeaseEvent, leaseId } from "../index.js";
