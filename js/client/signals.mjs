// AbortSignal helpers that need no AbortSignal.any (and leave no listener
// behind on long-lived signals such as a session's or the client's).

import { aborted } from "./errors.mjs";

/**
 * One signal that aborts when any of `signals` does (undefined entries are
 * skipped) or after `timeoutMs` (with `onTimeout()` as the reason). Call
 * `dispose()` when done so the sources drop their listeners.
 */
export function linkSignals(signals, timeoutMs, onTimeout) {
  const ctl = new AbortController();
  const cleanups = [];
  const abort = (reason) => {
    if (!ctl.signal.aborted) ctl.abort(reason);
    dispose();
  };
  const dispose = () => {
    for (const c of cleanups.splice(0)) c();
  };
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      abort(s.reason);
      return { signal: ctl.signal, dispose };
    }
    const on = () => abort(s.reason);
    s.addEventListener("abort", on, { once: true });
    cleanups.push(() => s.removeEventListener("abort", on));
  }
  if (timeoutMs !== undefined && timeoutMs !== Infinity) {
    const t = setTimeout(() => abort(onTimeout ? onTimeout() : new Error("timed out")), timeoutMs);
    cleanups.push(() => clearTimeout(t));
  }
  return { signal: ctl.signal, dispose };
}

/** Resolves after `ms`, or rejects with Aborted when `signal` aborts first. */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(signal));
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", on);
      resolve();
    }, ms);
    const on = () => {
      clearTimeout(t);
      reject(aborted(signal));
    };
    signal?.addEventListener("abort", on, { once: true });
  });
}

/** Throws the Aborted error of `signal` if it has aborted. */
export function checkSignal(signal) {
  if (signal?.aborted) throw aborted(signal);
}

/** Validates an optional `signal` option. */
export function signalOption(signal) {
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal.aborted !== "boolean" || typeof signal.addEventListener !== "function") {
    throw new TypeError("signal must be an AbortSignal");
  }
  return signal;
}
