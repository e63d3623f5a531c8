// Argument checks: what the wrapper refuses before anything reaches the
// core, each with an InvalidArgument LeaseError that says what was wrong.
// (Lease ids are checked where they are parsed, in ./binding.js.)

import { invalid } from "./errors.js";
import { StoredEntries } from "./codec.js";

const MAX_EPOCH_MS = 8.64e15;
// The longest a lease can last (MAX_LEASE_TTL in ms). Bounds promote's
// extension and checkpoints: larger values would saturate deadlines in the
// core to i64::MAX, which it reads as "no deadline" (a standby lease).
const MAX_TTL_MS = 9_000_000_000_000;

// A lone surrogate has no UTF-8 form: it would be stored as U+FFFD, so
// "\uD800" and "\uFFFD" would be one key, and a value would not come back
// as it was given. isWellFormed is missing before Node 20.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed =
  typeof String.prototype.isWellFormed === "function"
    ? (s) => s.isWellFormed()
    : (s) => !LONE_SURROGATE.test(s);

function checkText(s, what) {
  if (!wellFormed(s)) throw invalid(`${what} has a lone surrogate (not valid Unicode)`);
}

// UTF-8 bytes of a well-formed string.
function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4; // a surrogate pair: one 4-byte character
      i++;
    } else n += 3;
  }
  return n;
}

// Keys (and compare values) an etcd-shaped request (range, deleteRange,
// txn, watch) only compares, never stores: etcd takes whatever its
// transport lets through (2 MiB a request), and finds nothing for a key
// longer than any it can hold. Here any up to this (or maxKeyBytes, if
// more), so that a huge one is refused before it is copied into wasm
// memory, which it could exhaust. (get, delete and range(prefix) keep
// maxKeyBytes: issue 13 wants an error there, not "nothing".)
const QUERY_BYTES = 4 << 20;

/** The bound of a key that is only compared, for a lessor whose keys are at most `max` bytes. */
export const queryBound = (max) => Math.max(max, QUERY_BYTES);

export function checkKey(key, max, what = "key") {
  if (typeof key !== "string") throw invalid(`${what} must be a string, got ${typeof key}`);
  // UTF-8 is never shorter than the UTF-16 length: refuse huge keys before copying them.
  if (key.length > max) throw invalid(`${what} is longer than ${max} bytes`);
  checkText(key, what);
  // Up to 3 bytes per UTF-16 unit: count only when the bytes may be over
  // (reads check here; a get of a key too long to exist was quietly empty).
  if (key.length * 3 > max && utf8Length(key) > max) throw invalid(`${what} is longer than ${max} bytes`);
}

export function checkValue(value, max) {
  const text = typeof value === "string";
  if (!text && !(value instanceof Uint8Array)) {
    throw invalid(`value must be a string or a Uint8Array, got ${typeof value}`);
  }
  if (value.length > max) throw invalid(`value is longer than ${max} bytes`);
  if (text) checkText(value, "value");
}

export function checkInt(value, what) {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw invalid(`${what} must be a whole number, got ${typeof value === "number" ? value : typeof value}`);
  }
}

export function checkMs(value, what) {
  checkInt(value, what);
  if (value > MAX_TTL_MS) throw invalid(`${what} must be at most ${MAX_TTL_MS} ms`);
}

/** A method's options argument: an object, or nothing. */
export function options(arg, what) {
  if (arg === undefined || arg === null) return {};
  if (typeof arg !== "object") throw invalid(`${what} options must be an object`);
  return arg;
}

/** What the host clock returned, as whole epoch milliseconds. */
export function epochMs(t) {
  if (typeof t !== "number" || !Number.isFinite(t) || Math.abs(t) > MAX_EPOCH_MS) {
    throw invalid(`the clock returned ${String(t)}, not epoch milliseconds`);
  }
  return Math.floor(t);
}

// The upper bounds are what the binding's integer types hold (MAX_LEASE_TTL
// for minTtl).
function limit(opts, name, defaults, max) {
  const v = opts[name] ?? defaults[name];
  checkInt(v, name);
  if (v < 1 || v > max) throw invalid(`${name} must be between 1 and ${max}`);
  return v;
}

/**
 * The Lessor's options, checked, with `defaults` (the core's) filled in:
 * `{ now, config, autoTick, storage, restore }`; `restore` is the entries
 * to rebuild from (empty with storage alone; an iterable to read once, its
 * entries checked as they are read), or null for a new lessor.
 */
export function lessorOptions(arg, defaults) {
  const opts = options(arg, "Lessor");
  const now = opts.now ?? Date.now;
  if (typeof now !== "function") throw invalid("now must be a function returning epoch milliseconds");
  const config = {
    minTtl: limit(opts, "minTtl", defaults, 9_000_000_000),
    revokeRate: limit(opts, "revokeRate", defaults, 2 ** 32 - 1),
    maxKeyBytes: limit(opts, "maxKeyBytes", defaults, 2 ** 31),
    maxValueBytes: limit(opts, "maxValueBytes", defaults, 2 ** 31),
    maxKeysPerLease: limit(opts, "maxKeysPerLease", defaults, 2 ** 31),
    maxTxnOps: limit(opts, "maxTxnOps", defaults, 2 ** 31),
    // Infinity keeps every revision until compact().
    history: opts.history === Infinity ? Infinity : limit(opts, "history", defaults, Number.MAX_SAFE_INTEGER),
    // The core refuses more than it can hold (see Config::quota_bytes).
    quotaBytes: limit(opts, "quotaBytes", defaults, Number.MAX_SAFE_INTEGER),
  };
  const autoTick = opts.autoTick ?? true;
  let storage = null;
  if (opts.storage !== undefined && opts.storage !== null) {
    if (typeof opts.storage.write !== "function") throw invalid("storage must have a write(batch) method");
    storage = opts.storage;
  }
  let restore = null;
  if (opts.restore !== undefined || storage) {
    restore = [];
    if (opts.restore !== undefined && opts.restore !== null) {
      if (typeof opts.restore[Symbol.iterator] !== "function") {
        throw invalid("restore must be an iterable of [key, value] entries");
      }
      const r = opts.restore;
      // Entry lists a store kept go to the core as they are (it checks them).
      restore = r instanceof StoredEntries ? new StoredEntries(() => checkedEntries(r.items(), true), r.journal) : checkedEntries(r);
    }
  }
  return { now, config, autoTick, storage, restore };
}

// A restore's entries, each checked as it is read. Read once, as the
// binding packs them: not copied, so that a source which lets each entry go
// once read (the file store's) is never held whole beside the engine.
function* checkedEntries(entries, lists = false) {
  for (const entry of entries) {
    if (lists && entry instanceof Uint8Array) {
      yield entry;
      continue;
    }
    if (!Array.isArray(entry) || typeof entry[0] !== "string" ||
        !(typeof entry[1] === "string" || entry[1] instanceof Uint8Array)) {
      throw invalid("restore entries must be [string, Uint8Array | string] pairs");
    }
    yield entry;
  }
}
