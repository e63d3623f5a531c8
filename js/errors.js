// The one error class of edge-lease, and the binding's errors turned into it.

/** An error from edge-lease; `code` is stable (LeaseNotFound, InvalidArgument, ...). */
export class LeaseError extends Error {
  constructor(code, message, extra) {
    super(message);
    this.name = "LeaseError";
    this.code = code;
    if (extra) Object.assign(this, extra);
  }
}

export function invalid(message) {
  return new LeaseError("InvalidArgument", message);
}

// The binding throws plain Errors with a code: make them LeaseErrors so
// `instanceof` works for every error this package throws.
export function leaseError(e) {
  if (e instanceof LeaseError) return e;
  // A trap (the engine's wasm ran out of memory, say): the engine cannot be
  // entered again; its store has every change it acknowledged.
  if (e instanceof WebAssembly.RuntimeError) {
    return new LeaseError("EngineFailed", `the engine stopped (${e.message}): reopen the lessor from its store`, { cause: e });
  }
  if (e && typeof e.code === "string") {
    const extra = e.entry ? { entry: e.entry } : e.compactRevision !== undefined ? { compactRevision: e.compactRevision } : undefined;
    return new LeaseError(e.code, e.message, extra);
  }
  return new LeaseError("Internal", `edge-lease internal error: ${e && e.message ? e.message : e}`);
}
