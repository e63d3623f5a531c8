// Pieces shared by edge-lease/client's declarations (index.d.ts,
// recipes.d.ts); not exported from the package.

export interface Call {
  /** Aborts the call (LeaseError Aborted). */
  signal?: AbortSignal;
}

export interface Bytes<B extends boolean> {
  /** Keys and values as Uint8Array instead of strings. */
  bytes?: B;
}

type AsyncDisposeKey = SymbolConstructor extends { readonly asyncDispose: infer S extends symbol } ? S : never;
/** `await using` support where the lib knows Symbol.asyncDispose; nothing otherwise. */
export type AsyncDisposableIfKnown = { [K in AsyncDisposeKey]: () => Promise<void> };
