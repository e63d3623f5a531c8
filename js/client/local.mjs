// The backend over an in-process Lessor (written once the engine's
// range/deleteRange/txn/compact/watch reach the JS API).

import { LeaseError } from "./errors.mjs";

export function isLessor(x) {
  return x !== null && typeof x === "object" && typeof x.renew === "function" && typeof x.grant === "function";
}

export class LocalBackend {
  constructor() {
    throw new LeaseError("Unimplemented", "connect(lessor) needs the Lessor's range/txn/watch API, which this version does not have yet");
  }
}
