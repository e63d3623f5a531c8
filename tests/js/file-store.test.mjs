// The Node file store: crash safety under SIGKILL, torn tails, corruption,
// compaction. Lessor time is injected wherever time matters.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs"; // the patchable object, for the streaming test
import fsp from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor, LeaseError } from "edge-lease";
import { FileStore, crc32, readView } from "edge-lease/stores/file";

const T0 = 1_700_000_000_000;
const CHILD = new URL("./file-store-child.mjs", import.meta.url);
const FILE_HEADER = 24; // "edgelse2", kind, generation, CRC
const REC_HEADER = 20; // magic, type, length, payload CRC, header CRC

// The live journal: the highest journal-<g>.
function liveJournal(dir) {
  const g = Math.max(...readdirSync(dir).flatMap((n) => (/^journal-\d+$/.test(n) ? [Number(n.slice(8))] : [])));
  return join(dir, `journal-${g}`);
}

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-file-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function open(dir, clock = { t: T0 }, opts) {
  const store = FileStore.open(dir, opts);
  const lessor = new Lessor({ storage: store, restore: store.entries(), now: () => clock.t, autoTick: false });
  return { store, lessor, clock };
}

// Everything a restart must give back, as plain data.
function state(lessor) {
  return {
    revision: lessor.revision,
    leases: lessor.leases().sort(),
    keys: lessor.range("").map((e) => ({ ...e, value: typeof e.value === "string" ? e.value : [...e.value] })),
  };
}

// Holds each journal sync (fdatasync) until the test lets it finish (the
// store's named import follows the patch once syncBuiltinESMExports has
// run): { held: [{ fd, cb }], real, restore() }; restored after the test.
function holdSyncs(t) {
  const real = fs.fdatasync;
  const held = [];
  const restore = () => {
    fs.fdatasync = real;
    syncBuiltinESMExports();
  };
  fs.fdatasync = (fd, cb) => held.push({ fd, cb });
  syncBuiltinESMExports();
  t.after(restore);
  return { held, real, restore };
}

// Waits (up to 5 s) until `cond()` holds, and asserts it.
async function until(cond) {
  for (const end = Date.now() + 5000; !cond() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 1));
  assert.ok(cond());
}

// The state a fresh open of `dir` restores (closing it again).
function restored(dir, clock) {
  const { store, lessor } = open(dir, clock);
  const s = state(lessor);
  store.close();
  lessor.close();
  return s;
}

function entriesAsObject(entries) {
  return Object.fromEntries([...entries].map(([k, v]) => [k, Buffer.from(v).toString("latin1")]));
}

// ---- SIGKILL ----------------------------------------------------------------

// What the lessor in `dir` holds, as the model the child's acks are applied to.
function model(lessor) {
  const keys = new Map();
  for (const e of lessor.range("")) keys.set(e.key, { value: e.value, lease: e.lease, mod: e.modRevision });
  return { keys, leases: new Set(lessor.leases()), revision: lessor.revision };
}

function cloneModel(m) {
  return { keys: new Map(m.keys), leases: new Set(m.leases), revision: m.revision };
}

// Applies an operation as the lessor would; `revision` is the one it got
// (acknowledged) or would get (the unacknowledged last intent).
function applyOp(m, op, revision) {
  switch (op.op) {
    case "grant":
      if (op.id) m.leases.add(op.id);
      break;
    case "put":
      m.keys.set(op.key, { value: op.value, lease: op.lease, mod: revision });
      m.revision = revision;
      break;
    case "delete":
      if (m.keys.delete(op.key)) m.revision = revision;
      break;
    case "revoke": {
      m.leases.delete(op.id);
      let any = false;
      for (const [k, e] of m.keys) {
        if (e.lease === op.id) {
          m.keys.delete(k);
          any = true;
        }
      }
      if (any) m.revision = revision;
      break;
    }
    default:
      break;
  }
}

function observed(lessor) {
  const m = model(lessor);
  return {
    keys: Object.fromEntries([...m.keys].sort()),
    leases: [...m.leases].sort(),
    revision: m.revision,
  };
}

function asObserved(m) {
  return { keys: Object.fromEntries([...m.keys].sort()), leases: [...m.leases].sort(), revision: m.revision };
}

// Runs the child until it has acknowledged `acks` operations, kills it with
// SIGKILL, and returns every line it printed.
function runAndKill(dir, seed, acks) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD.pathname, dir, String(seed)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let buf = "";
    let err = "";
    let count = 0;
    const lines = [];
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        lines.push(line);
        if (line.ack && ++count === acks) child.kill("SIGKILL");
      }
    });
    child.stderr.on("data", (c) => (err += c));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (signal !== "SIGKILL") reject(new Error(`child exited (${code}, ${signal}) before the kill: ${err}`));
      else resolve(lines);
    });
  });
}

test("SIGKILL at random points: every acknowledged change survives", async (t) => {
  const dir = tempDir(t);
  let seed = (Date.now() % 1_000_000) + 1;
  let compactions = 0;
  let torn = 0;
  let pendingApplied = 0;
  let totalAcks = 0;
  const rounds = 8;
  for (let round = 0; round < rounds; round++) {
    const why = `round ${round}, seed ${seed}, dir ${dir}`;
    // The state the child starts from: what a restore gives now.
    const before = open(dir);
    const start = model(before.lessor);
    before.store.close();

    const acks = 40 + ((seed * 7919) % 400);
    const lines = await runAndKill(dir, seed, acks);
    const m = cloneModel(start);
    let pending = null;
    for (const line of lines) {
      if (line.intent) {
        pending = { ...line, op: line.intent };
        continue;
      }
      if (line.ack === "compact") {
        compactions++;
        continue;
      }
      totalAcks++;
      applyOp(m, { ...line, op: line.ack }, line.revision);
      if (line.revision !== undefined) assert.ok(line.revision >= m.revision, why);
      pending = null;
    }

    const sizeOnDisk = statSync(liveJournal(dir)).size;
    const after = open(dir);
    if (after.store.sizes.journal < sizeOnDisk) torn++;
    const got = observed(after.lessor);
    const acked = asObserved(m);
    // The last operation may have become durable without being acknowledged.
    let alt = null;
    if (pending) {
      const p = cloneModel(m);
      // A grant's id is picked inside the call, so the intent line cannot
      // name it: take the one new lease the restore has, if there is one.
      if (pending.op === "grant") {
        const fresh = got.leases.filter((id) => !m.leases.has(id));
        if (fresh.length === 1) pending = { ...pending, id: fresh[0] };
      }
      applyOp(p, pending, m.revision + 1);
      alt = asObserved(p);
    }
    assert.ok(got.revision >= m.revision, `${why}: revision ${got.revision} < acknowledged ${m.revision}`);
    if (alt && equal(got, alt) && !equal(got, acked)) {
      pendingApplied++;
    } else {
      assert.deepEqual(got, acked, `${why}: restored state differs from the acknowledged one`);
    }
    after.store.close();
    after.lessor.close();
    seed = (seed * 48271) % 2147483647;
  }
  t.diagnostic(
    `${rounds} SIGKILL rounds, ${totalAcks} acknowledged ops, ${compactions} compactions, ` +
      `${torn} torn tails cut, ${pendingApplied} unacknowledged last ops found durable`,
  );
});

function equal(a, b) {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

// ---- journal format ------------------------------------------------------------

test("state round-trips: extreme lease ids, text and bytes, revisions", (t) => {
  const dir = tempDir(t);
  const a = open(dir);
  for (const id of ["ffffffffffffffff", "8000000000000000", "7fffffffffffffff"]) a.lessor.grant(60, { id });
  a.lessor.put("text", "h\u00e9llo", { lease: "ffffffffffffffff" });
  a.lessor.put("bytes", new Uint8Array([0, 10, 255]), { lease: "8000000000000000" });
  a.lessor.put("plain", "1");
  a.lessor.put("plain", "2");
  a.lessor.delete("text");
  a.lessor.put("text", "again", { lease: "7fffffffffffffff" });
  const want = state(a.lessor);
  a.store.close();
  const b = open(dir);
  assert.deepEqual(state(b.lessor), want);
  assert.equal(typeof b.lessor.get("text").value, "string");
  assert.ok(b.lessor.get("bytes").value instanceof Uint8Array);
  assert.equal(b.lessor.get("plain").version, 2);
  b.store.close();
});

test("a batch from the core is appended as it comes; one whose bytes do not check out is written from put and delete", (t) => {
  const dir = tempDir(t);
  const store = FileStore.open(dir);
  const seen = [];
  const lessor = new Lessor({
    now: () => T0,
    autoTick: false,
    storage: { write: (b) => (seen.push(b), store.write(b)) },
  });
  lessor.grant(60, { id: "00000000000000aa" });
  lessor.put("k\u00e9y", new Uint8Array([0, 255]), { lease: "00000000000000aa" });
  lessor.delete("k\u00e9y");
  // The journal's records hold the core's packed bytes, unchanged.
  const journal = readFileSync(join(dir, readdirSync(dir).find((n) => n.startsWith("journal-"))));
  let at = FILE_HEADER;
  for (const b of seen) {
    assert.ok(b.bytes instanceof Uint8Array);
    const len = journal.readUInt32LE(at + 8);
    assert.deepEqual(journal.subarray(at + REC_HEADER, at + REC_HEADER + len), Buffer.from(b.bytes));
    at += REC_HEADER + len;
  }
  assert.equal(store.bytesWritten, at - FILE_HEADER, "bytesWritten counts the records appended");
  // A store-made batch whose bytes are not a whole batch: its entries count.
  store.write({ bytes: new Uint8Array([9, 9, 9]), put: [["v1/host/note", new Uint8Array([1])]], delete: [] });
  store.write({ bytes: new Uint8Array([1, 0, 0, 0, 200, 0, 0, 0]), put: [], delete: ["v1/host/note"] });
  const want = state(lessor);
  store.close();
  const again = FileStore.open(dir);
  assert.equal(again.bytesWritten, 0, "since this open");
  const entries = new Map(again.entries());
  assert.equal(entries.has("v1/host/note"), false);
  assert.deepEqual(state(new Lessor({ now: () => T0, autoTick: false, restore: entries })), want);
  again.close();
});

test("host entries: kept beside the state, through restarts and compactions; bad ones are InvalidArgument", async (t) => {
  const dir = tempDir(t);
  const a = open(dir, undefined, { minCompactBytes: 1 });
  assert.equal(a.lessor.hostEntry("alarms"), undefined);
  a.lessor.setHostEntry("alarms", new Uint8Array([1, 2, 3]));
  a.lessor.setHostEntry("gone", new Uint8Array([9]));
  a.lessor.setHostEntry("gone", null);
  a.lessor.put("k", "v");
  const revision = a.lessor.revision;
  a.store.close();
  const b = open(dir, undefined, { minCompactBytes: 1 });
  assert.deepEqual([...b.lessor.hostEntry("alarms")], [1, 2, 3]);
  assert.equal(b.lessor.hostEntry("gone"), undefined);
  assert.equal(b.lessor.revision, revision, "host entries write no revision");
  // A copy: changing it changes nothing stored.
  b.lessor.hostEntry("alarms")[0] = 7;
  assert.deepEqual([...b.lessor.hostEntry("alarms")], [1, 2, 3]);
  assert.equal(await b.store.compactFrom(b.lessor, { force: true }), true);
  b.lessor.setHostEntry("after", new Uint8Array(0));
  await b.store.close();
  const c = open(dir);
  assert.deepEqual([...c.lessor.hostEntry("alarms")], [1, 2, 3], "through the snapshot");
  assert.deepEqual([...c.lessor.hostEntry("after")], [], "through the journal after it");
  for (const [name, value] of [["a/b", new Uint8Array(1)], ["", new Uint8Array(1)], [7, new Uint8Array(1)], ["ok", "text"], ["ok", new Uint8Array((1 << 20) + 1)]]) {
    assert.throws(() => c.lessor.setHostEntry(name, value), (e) => e instanceof LeaseError && e.code === "InvalidArgument", `${name}`);
  }
  assert.equal(c.lessor.hostEntry("ok"), undefined);
  c.store.close();
});

function writeSome(dir) {
  const a = open(dir);
  const { id } = a.lessor.grant(60, { id: "0000000000000001" });
  a.lessor.put("a", "1", { lease: id });
  a.lessor.put("b", "2");
  const entries = a.store.entries();
  const size = a.store.sizes.journal;
  a.store.close();
  return { entries, size, state: state(a.lessor) };
}

test("a torn last record is dropped and cut off; later writes replay", (t) => {
  const base = tempDir(t);
  const ref = join(base, "ref");
  const { size: good, state: want } = writeSome(ref);
  // The record of one more put, to tear at every kind of point.
  const more = open(ref);
  more.lessor.put("c", "3");
  more.store.close();
  const full = readFileSync(join(ref, "journal-1"));
  const recordLen = full.length - good;
  const cuts = [1, 4, 12, REC_HEADER - 1, REC_HEADER, REC_HEADER + 1, recordLen - 1];
  const tails = cuts.map((cut) => [`cut at ${cut}`, full.subarray(0, good + cut)]);
  // A full-length last record whose payload, or header and payload, never
  // reached the disk (zeros), and zeros after the last record (the usual
  // tail after a power loss), of a few lengths.
  tails.push(["zero payload", Buffer.concat([full.subarray(0, good + REC_HEADER), Buffer.alloc(recordLen - REC_HEADER)])]);
  tails.push(["zero record", Buffer.concat([full.subarray(0, good), Buffer.alloc(recordLen)])]);
  for (const n of [1, 8, 20, 512, 4096]) tails.push([`${n} zeros`, Buffer.concat([full.subarray(0, good), Buffer.alloc(n)])]);
  for (const [why, bytes] of tails) {
    const dir = join(base, why.replaceAll(" ", "-"));
    writeSome(dir);
    writeFileSync(join(dir, "journal-1"), bytes);
    const b = open(dir);
    assert.deepEqual(state(b.lessor), want, why);
    assert.equal(statSync(join(dir, "journal-1")).size, good, `${why}: the torn bytes are cut off`);
    b.lessor.put("d", "4");
    b.store.close();
    const c = open(dir);
    assert.equal(c.lessor.get("d").value, "4");
    assert.equal(c.lessor.get("c"), undefined);
    c.store.close();
  }
  // Zeros after a complete last record keep that record.
  const dir = join(base, "zeros-after-all");
  writeSome(dir);
  writeFileSync(join(dir, "journal-1"), Buffer.concat([full, Buffer.alloc(8)]));
  const z = open(dir);
  assert.equal(z.lessor.get("c").value, "3");
  z.store.close();
});

function code(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof LeaseError, `expected a LeaseError, got ${e}`);
    return e;
  }
  assert.fail("expected a throw");
}

// A store of 110 keys on one lease, written one put at a time, as in issue 13.
function write110(dir) {
  const a = open(dir);
  const { id } = a.lessor.grant(60, { id: "0000000000000001" });
  for (let i = 0; i < 110; i++) a.lessor.put(`k${i}`, `v${i}`, { lease: id });
  a.store.close();
  return state(a.lessor);
}

test("a damaged length, header or payload before the end is CorruptEntry naming file and byte", (t) => {
  const base = tempDir(t);
  const ref = join(base, "ref");
  write110(ref);
  const full = readFileSync(join(ref, "journal-1"));
  const first = FILE_HEADER; // the grant's record
  const second = first + REC_HEADER + full.readUInt32LE(first + 8);
  const cases = [
    // One flipped bit in the first record's length: it used to be taken for
    // a torn tail, truncating 110 keys and a lease away.
    ["first length", first + 8, 0x01, first, /bad record header/],
    ["first length, high bit", first + 11, 0x80, first, /bad record header/],
    ["second length", second + 8, 0x04, second, /bad record header/],
    ["magic", second, 0x01, second, /bad record header/],
    ["type", second + 4, 0x02, second, /bad record header/],
    ["payload CRC", second + 12, 0x10, second, /bad record header/],
    ["header CRC", second + 16, 0x10, second, /bad record header/],
    ["payload", second + REC_HEADER + 2, 0x40, second, /checksum/],
    // The last record is not excused: a flipped bit is not a torn write.
    ["last payload", full.length - 6, 0x01, full.length - (full.length - second) / 110, null],
  ];
  for (const [why, at, bit, recordAt, message] of cases) {
    const dir = join(base, why.replaceAll(" ", "-").replaceAll(",", ""));
    write110(dir);
    const bytes = Buffer.from(full);
    bytes[at] ^= bit;
    writeFileSync(join(dir, "journal-1"), bytes);
    const e = code(() => open(dir));
    assert.equal(e.code, "CorruptEntry", why);
    assert.match(e.entry, /^journal-1@\d+$/, why);
    if (why !== "last payload") assert.equal(e.entry, `journal-1@${recordAt}`, why);
    if (message) assert.match(e.message, message, why);
    assert.deepEqual(readFileSync(join(dir, "journal-1")), bytes, `${why}: the file is left as it was`);
  }

  // A record whose checksums match but does not parse as a batch.
  const dir = join(base, "malformed");
  write110(dir);
  const b = Buffer.from(full);
  const len = b.readUInt32LE(first + 8);
  b.writeUInt32LE(0xffff, first + REC_HEADER); // absurd put count
  b.writeUInt32LE(crc32(b.subarray(first + REC_HEADER, first + REC_HEADER + len)), first + 12);
  b.writeUInt32LE(crc32(b.subarray(first, first + 16)), first + 16);
  writeFileSync(join(dir, "journal-1"), b);
  const e = code(() => open(dir));
  assert.equal(e.entry, `journal-1@${first}`);
  assert.match(e.message, /malformed/);

  // A damaged file header.
  const dir2 = join(base, "header");
  write110(dir2);
  const h = Buffer.from(full);
  h.write("nope", 0);
  writeFileSync(join(dir2, "journal-1"), h);
  const e2 = code(() => open(dir2));
  assert.equal(e2.entry, "journal-1@0");
  assert.match(e2.message, /file header/);
});

test("a missing snapshot or journal is CorruptEntry, not a smaller state", async (t) => {
  const base = tempDir(t);
  // snapshot-2 + journal-2 (sealed) + journal-3: a compaction stopped
  // before its snapshot was written, then more writes.
  const ref = join(base, "ref");
  const a = open(ref);
  const { id } = a.lessor.grant(60, { id: "0000000000000001" });
  for (let i = 0; i < 20; i++) a.lessor.put(`k${i}`, `v${i}`, { lease: id });
  await a.store.compactFrom(a.lessor, { force: true });
  a.lessor.put("in-2", "x");
  const stopped = a.store.compact(a.lessor.snapshot());
  await a.store.close();
  await assert.rejects(stopped, { code: "Closed" });
  const b = open(ref);
  b.lessor.put("in-3", "y");
  const want = state(b.lessor);
  b.store.close();
  assert.deepEqual(readdirSync(ref).sort(), ["journal-2", "journal-3", "snapshot-2"]);
  assert.deepEqual(restored(ref), want);

  for (const [gone, entry] of [
    ["snapshot-2", "snapshot-2"],
    ["journal-2", "journal-2"],
    ["journal-3", "journal-3"],
  ]) {
    const dir = join(base, `no-${gone}`);
    mkdirSync(dir);
    for (const n of readdirSync(ref)) if (n !== gone) copyFileSync(join(ref, n), join(dir, n));
    const e = code(() => open(dir));
    assert.equal(e.code, "CorruptEntry", gone);
    assert.equal(e.entry, entry, gone);
    assert.match(e.message, /missing/, gone);
  }
  // The only journal of a compacted store.
  const dir = join(base, "compacted");
  const c = open(dir);
  c.lessor.put("a", "1");
  await c.store.compactFrom(c.lessor, { force: true });
  await c.store.close();
  unlinkSync(join(dir, "journal-2"));
  assert.equal(code(() => open(dir)).entry, "journal-2");
});

test("a store entry the lessor cannot read is CorruptEntry naming the entry", (t) => {
  const dir = tempDir(t);
  const s = FileStore.open(dir);
  s.write({ put: [["v1/lease/0000000000000001", new TextEncoder().encode("ttl=0 deadline=none remaining=0")]], delete: [] });
  s.close();
  const e = code(() => open(dir));
  assert.equal(e.code, "CorruptEntry");
  assert.equal(e.entry, "v1/lease/0000000000000001");
});

test("compaction: bounded journal, many compactions, crash at each step restores the same state", async (t) => {
  const dir = tempDir(t);
  const clock = { t: T0 };
  const a = open(dir, clock, { compactFactor: 2, minCompactBytes: 512 });
  const { id } = a.lessor.grant(30, { id: "00000000000000aa" });
  a.lessor.put("lock", "me", { lease: id });
  let compactions = 0;
  for (let i = 0; i < 200; i++) {
    clock.t += 10_000; // keepalive every TTL/3
    a.lessor.renew(id);
    a.lessor.put(`k${i % 5}`, `v${i}`);
    if (await a.store.compactFrom(a.lessor)) {
      compactions++;
      assert.equal(a.store.sizes.journal, FILE_HEADER, "the new journal is empty");
    }
    const { journal, snapshot } = a.store.sizes;
    assert.ok(journal - FILE_HEADER < Math.max(512, 2 * snapshot) + 400, `journal ${journal} stays bounded`);
  }
  assert.ok(compactions >= 5, `compacted ${compactions} times`);
  assert.deepEqual(readdirSync(dir).sort(), [`journal-${a.store.generation}`, "lock", `snapshot-${a.store.generation}`]);
  const want = state(a.lessor);
  const snapshotBefore = a.store.entries();
  const g = a.store.generation;
  // A crash after the snapshot was renamed into place, before the old
  // generation was removed: the old files are left over, and ignored.
  const running = a.store.compactFrom(a.lessor, { force: true });
  const sealed = readFileSync(join(dir, `journal-${g}`));
  const oldSnapshot = readFileSync(join(dir, `snapshot-${g}`));
  assert.equal(await running, true);
  assert.deepEqual(entriesAsObject(a.store.entries()), entriesAsObject(snapshotBefore));
  await a.store.close();
  assert.deepEqual(restored(dir, clock), want);
  writeFileSync(join(dir, `journal-${g}`), sealed);
  writeFileSync(join(dir, `snapshot-${g}`), oldSnapshot);
  const b = open(dir, clock);
  assert.deepEqual(state(b.lessor), want);
  assert.ok(!existsSync(join(dir, `journal-${g}`)), "the leftovers are removed");
  // A crash before the rename leaves a stray temp file: ignored, removed.
  writeFileSync(join(dir, `snapshot-${g + 2}.tmp`), oldSnapshot.subarray(0, 40));
  // A crash between creating the next journal and sealing this one leaves
  // an empty next journal: ignored, removed.
  copyFileSync(join(dir, `journal-${g + 1}`), join(dir, `journal-${g + 2}`));
  await b.store.close();
  writeFileSync(join(dir, `journal-${g + 2}`), readFileSync(join(dir, `journal-${g + 2}`)).subarray(0, FILE_HEADER));
  const header = readFileSync(join(dir, `journal-${g + 2}`));
  header.writeUInt32LE(g + 2, 12); // its own generation, as the store writes it
  header.writeUInt32LE(crc32(header.subarray(0, 20)), 20);
  writeFileSync(join(dir, `journal-${g + 2}`), header);
  const d = open(dir, clock, { minCompactBytes: 1 });
  assert.deepEqual(state(d.lessor), want);
  assert.deepEqual(readdirSync(dir).sort(), [`journal-${g + 1}`, "lock", `snapshot-${g + 1}`]);
  assert.equal(await d.store.compactFrom(d.lessor, { force: true }), true);
  await d.store.close();
  assert.deepEqual(restored(dir, clock), want);
});

test("maxJournalBytes bounds the journal even when the snapshot is large", async (t) => {
  const dir = tempDir(t);
  const a = open(dir, undefined, { minCompactBytes: 1, maxJournalBytes: 4096 });
  const big = "x".repeat(1000);
  for (let i = 0; i < 200; i++) a.lessor.put(`big${i}`, big); // ~200 KB of state
  await a.store.compactFrom(a.lessor, { force: true });
  let compactions = 0;
  for (let i = 0; i < 300; i++) {
    a.lessor.put(`k${i % 7}`, `v${i}`);
    if (await a.store.compactFrom(a.lessor)) compactions++;
    assert.ok(a.store.sizes.journal < 4096 + 200, `journal ${a.store.sizes.journal}`);
  }
  // 4 x a 200 KB snapshot would have let it grow to 800 KB without one.
  assert.ok(compactions >= 5, `compacted ${compactions} times`);
  const want = state(a.lessor);
  await a.store.close();
  assert.deepEqual(restored(dir), want);
});

test("compaction yields to the event loop, and writes made meanwhile survive", async (t) => {
  const dir = tempDir(t);
  const a = open(dir);
  const value = new Uint8Array(64 << 10).fill(7);
  for (let i = 0; i < 320; i++) a.lessor.put(`big${i}`, value); // 20 MiB
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  let writes = 0;
  const running = a.store.compactFrom(a.lessor, { force: true });
  // Compaction is under way: keep writing until it is done.
  let done = false;
  running.then(() => (done = true));
  while (!done) {
    a.lessor.put(`during${writes++}`, "x");
    await new Promise((resolve) => setImmediate(resolve));
  }
  clearInterval(timer);
  assert.equal(await running, true);
  // The snapshot is written in 1 MiB records with an await after each: the
  // timer and the writes above got turns in between.
  assert.ok(ticks >= 1, `the 1 ms timer fired ${ticks} times during compaction`);
  assert.ok(writes >= 2, `${writes} writes interleaved with compaction`);
  t.diagnostic(`20 MiB compaction: ${ticks} timer turns, ${writes} interleaved writes`);
  const want = state(a.lessor);
  await a.store.close();
  const b = open(dir);
  assert.deepEqual(state(b.lessor), want);
  assert.equal(b.lessor.get(`during${writes - 1}`).value, "x");
  b.store.close();
});

test("compactFrom: the next journal is made off the event loop, so the switch to it syncs no file on the loop; the snapshot is synced as it is written", async (t) => {
  const dir = tempDir(t);
  // fsyncSync is what creating a file whole on the loop takes (the file,
  // then its directory): the event loop waits for the disk meanwhile.
  const realFsync = fs.fsyncSync;
  const onLoop = [];
  fs.fsyncSync = (fd) => (onLoop.push(fd), realFsync(fd));
  syncBuiltinESMExports();
  // The snapshot's syncs while it is written (FileHandle.datasync, off the loop).
  const probe = await fsp.open(join(dir, "probe"), "w");
  const FileHandle = Object.getPrototypeOf(probe);
  await probe.close();
  unlinkSync(join(dir, "probe"));
  const realDatasync = FileHandle.datasync;
  let datasyncs = 0;
  FileHandle.datasync = function () {
    datasyncs++;
    return realDatasync.call(this);
  };
  t.after(() => {
    fs.fsyncSync = realFsync;
    syncBuiltinESMExports();
    FileHandle.datasync = realDatasync;
  });
  const a = open(dir, undefined, { groupCommit: true });
  const value = new Uint8Array(16 << 10).fill(3);
  for (let i = 0; i < 640; i++) a.lessor.put(`k${i}`, value); // 10 MiB: more than one of the snapshot's syncs
  await a.lessor.flush();
  const gen = a.store.generation;
  onLoop.length = 0;
  const running = a.store.compactFrom(a.lessor, { force: true });
  let writes = 0;
  let done = false;
  running.then(() => (done = true));
  while (!done) {
    a.lessor.put(`during${writes++}`, "x");
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.equal(await running, true);
  assert.equal(a.store.generation, gen + 1);
  assert.deepEqual(onLoop, [], "files created and synced on the event loop during the compaction");
  // ~10 MiB of snapshot: synced at least twice before its last sync.
  assert.ok(datasyncs >= 2, `the snapshot was synced ${datasyncs} times as it was written`);
  await a.lessor.flush();
  const want = state(a.lessor);
  await a.store.close();
  a.lessor.close();
  assert.deepEqual(readdirSync(dir).filter((n) => /^(journal|snapshot)-/.test(n)).sort(), [`journal-${gen + 1}`, `snapshot-${gen + 1}`]);
  const b = open(dir);
  assert.deepEqual(state(b.lessor), want);
  await b.store.close();
  b.lessor.close();
});

test("close() while the next journal is being made releases the lock once that is done; the store reopens with every write", async (t) => {
  const dir = tempDir(t);
  const a = open(dir, undefined, { groupCommit: true });
  for (let i = 0; i < 100; i++) a.lessor.put(`k${i}`, "v");
  await a.lessor.flush();
  const running = a.store.compactFrom(a.lessor, { force: true });
  const want = state(a.lessor);
  await a.store.close();
  // The compaction gives up (the store closed) or finishes; either way the data is there.
  await running.catch((e) => assert.equal(e.code, "Closed"));
  a.lessor.close();
  const b = open(dir);
  assert.deepEqual(state(b.lessor), want);
  await b.store.close();
  b.lessor.close();
});

test("compactFrom reads the lessor in steps: changes made meanwhile before and after where it has got to all survive", async (t) => {
  const dir = tempDir(t);
  const clock = { t: T0 };
  const a = open(dir, clock, { groupCommit: true });
  const n = 6000;
  const ids = [];
  for (let i = 0; i < n; i++) {
    const { id } = a.lessor.grant(600);
    ids.push(id);
    a.lessor.put(`k${String(i).padStart(5, "0")}`, `v${i}`, { lease: id });
  }
  a.lessor.put("k00000", "history"); // an old version to keep
  await a.lessor.flush();
  const read = [];
  const real = a.lessor.snapshotEntries.bind(a.lessor);
  a.lessor.snapshotEntries = function* (step) {
    for (const e of real(step)) {
      read.push(e[0]);
      yield e;
    }
  };
  const running = a.store.compactFrom(a.lessor, { force: true });
  let done = false;
  running.then(() => (done = true));
  let step = 0;
  while (!done) {
    // Each turn, a change at the start, the middle and the end of the key
    // space and of the leases, whatever the snapshot has read so far.
    const i = step++;
    a.lessor.put(`a${i}`, "before all");
    a.lessor.put(`k${String((i * 997) % n).padStart(5, "0")}`, `changed ${i}`);
    a.lessor.delete(`k${String(n - 1 - i).padStart(5, "0")}`);
    a.lessor.put(`z${i}`, "after all");
    a.lessor.revoke(ids[(i * 13) % n]);
    a.lessor.grant(60, { id: (0x7000000000000000n + BigInt(i)).toString(16) });
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.equal(await running, true);
  // It was read a part at a time, with changes in between.
  assert.ok(step >= 3, `${step} turns of changes while it was written`);
  assert.ok(read.length >= 2 * n, `${read.length} entries read`);
  await a.lessor.flush();
  const want = state(a.lessor);
  await a.store.close();
  a.lessor.close();
  assert.deepEqual(restored(dir, clock), want);
});

test("a journal that fails during a compaction read in steps: the snapshot does not replace the files", async (t) => {
  const dir = tempDir(t);
  const realWrite = fs.writeSync;
  let failNext = false;
  fs.writeSync = function (...args) {
    if (failNext) {
      failNext = false;
      throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    }
    return realWrite.apply(this, args);
  };
  syncBuiltinESMExports();
  t.after(() => {
    fs.writeSync = realWrite;
    syncBuiltinESMExports();
  });
  const clock = { t: T0 };
  const a = open(dir, clock, { groupCommit: true });
  const { id } = a.lessor.grant(60);
  a.lessor.put("a", "1", { lease: id });
  a.lessor.put("b", "x".repeat(300_000)); // more than a snapshot record
  a.lessor.put("z", "1", { lease: id });
  await a.lessor.flush();
  const want = state(a.lessor);
  const read = [];
  const entries = (function* () {
    for (const e of a.lessor.snapshotEntries(1)) {
      read.push(e[0]);
      yield e;
    }
  })();
  const running = a.store.compact(entries);
  // Once "a" is read and before "z" is, a revoke (one batch: the lease, a
  // and z) whose append fails: the lessor applied it, the journal lost it.
  while (!read.includes("v1/key/b")) await new Promise((resolve) => setImmediate(resolve));
  failNext = true;
  a.lessor.revoke(id);
  await assert.rejects(a.lessor.flush(), (e) => e.code === "StorageFailed");
  await assert.rejects(running, (e) => e.code === "StorageFailed");
  assert.ok(!readdirSync(dir).some((n) => n.startsWith("snapshot-2")), "no snapshot of the lost revoke");
  await a.store.close().catch(() => {});
  a.lessor.close();
  // The store restores what was durable: the revoke never was.
  assert.deepEqual(restored(dir, clock), want);
});

test("close() while a compaction read in steps ends, with a group-commit sync in flight, resolves and releases the lock", async (t) => {
  const dir = tempDir(t);
  const realSync = fs.fdatasync;
  fs.fdatasync = (fd, cb) => realSync(fd, (err) => setTimeout(() => cb(err), 200)); // a slow disk
  syncBuiltinESMExports();
  const probe = await fsp.open(join(dir, "probe"), "w");
  const FileHandle = Object.getPrototypeOf(probe);
  await probe.close();
  const realHandleSync = FileHandle.sync;
  t.after(() => {
    fs.fdatasync = realSync;
    FileHandle.sync = realHandleSync;
    syncBuiltinESMExports();
  });
  const a = open(dir, undefined, { groupCommit: true });
  for (let i = 0; i < 10; i++) a.lessor.put(`k${i}`, "v");
  await a.lessor.flush();
  let closing = null;
  // The snapshot is written; as it is synced, the store closes.
  FileHandle.sync = function () {
    closing ??= a.store.close();
    return realHandleSync.call(this);
  };
  const running = a.store.compactFrom(a.lessor, { force: true });
  a.lessor.put("x", "1");
  a.lessor.put("y", "2"); // a round of two: synced on the pool, slowly
  await assert.rejects(running, (e) => e.code === "Closed");
  assert.ok(closing, "closed during the compaction");
  const settled = await Promise.race([closing.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 3000))]);
  assert.equal(settled, true, "close() resolved");
  assert.ok(!existsSync(join(dir, "lock")), "the lock is released");
  a.lessor.close();
  fs.fdatasync = realSync;
  FileHandle.sync = realHandleSync;
  syncBuiltinESMExports();
  // What was acknowledged is there.
  const b = open(dir);
  assert.equal(b.lessor.get("k9").value, "v");
  await b.store.close();
  b.lessor.close();
});

test("restart streams the files: no whole-file reads, no read past 1 MiB for small records", async (t) => {
  const dir = tempDir(t);
  const s = FileStore.open(dir, { minCompactBytes: 1 });
  const value = new Uint8Array(4000).fill(9);
  for (let i = 0; i < 500; i++) s.write({ put: [[`k${i % 50}`, value]], delete: [] });
  await s.compact(s.entries());
  for (let i = 0; i < 1500; i++) s.write({ put: [[`k${i % 60}`, value]], delete: i % 7 ? [] : [`k${i % 50}`] });
  const want = entriesAsObject(s.entries());
  await s.close();
  assert.ok(fs.statSync(join(dir, "journal-2")).size > 4 << 20, "a journal of several MiB");
  // Watch every read the store makes (the store's named imports of node:fs
  // follow these patches once syncBuiltinESMExports has run).
  const { readFileSync: wholeRead, readSync } = fs;
  const whole = [];
  let largest = 0;
  fs.readFileSync = (path, ...rest) => {
    whole.push(String(path));
    return wholeRead(path, ...rest);
  };
  fs.readSync = (fd, buf, off, len, pos) => {
    largest = Math.max(largest, len);
    return readSync(fd, buf, off, len, pos);
  };
  syncBuiltinESMExports();
  let got;
  try {
    const b = FileStore.open(dir);
    got = entriesAsObject(b.entries());
    b.close();
  } finally {
    fs.readFileSync = wholeRead;
    fs.readSync = readSync;
    syncBuiltinESMExports();
  }
  assert.deepEqual(got, want);
  assert.deepEqual(whole.filter((p) => !p.endsWith("boot_id") && !p.endsWith("lock")), [], "no store file is read whole");
  assert.ok(largest > 0 && largest <= 1 << 20, `largest single read ${largest} bytes`);
});

// ---- one process per directory -----------------------------------------------------

// A child process that opens the store in `dir`, says "open" and waits.
function holder(dir) {
  const child = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { FileStore } from "edge-lease/stores/file";
       FileStore.open(${JSON.stringify(dir)});
       process.stdout.write("open\\n");
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"], cwd: new URL("../..", import.meta.url).pathname },
  );
  const ready = new Promise((resolve, reject) => {
    child.stdout.once("data", resolve);
    child.once("exit", (c) => reject(new Error(`holder exited with ${c}`)));
  });
  const gone = new Promise((resolve) => child.once("exit", resolve));
  return { child, ready, gone };
}

test("one process per directory: a second opener is refused; the lock ends with its holder", async (t) => {
  const dir = tempDir(t);
  const a = FileStore.open(dir);
  const e = code(() => FileStore.open(dir));
  assert.equal(e.code, "Locked");
  assert.equal(e.pid, process.pid);
  assert.ok(e.message.includes(dir) && e.message.includes(String(process.pid)), e.message);
  a.write({ put: [["k", new Uint8Array([1])]], delete: [] });
  await a.close();
  assert.ok(!existsSync(join(dir, "lock")), "close releases the lock");

  // Another process holds it.
  const h = holder(dir);
  t.after(() => h.child.kill("SIGKILL"));
  await h.ready;
  const e2 = code(() => FileStore.open(dir));
  assert.equal(e2.code, "Locked");
  assert.equal(e2.pid, h.child.pid);
  assert.match(e2.message, new RegExp(`process ${h.child.pid}`));
  // SIGKILLed, it cannot release it: the next opener finds it stale.
  h.child.kill("SIGKILL");
  await h.gone;
  assert.ok(existsSync(join(dir, "lock")));
  const b = FileStore.open(dir);
  assert.deepEqual(entriesAsObject(b.entries()), { k: "\x01" });
  await b.close();

  // A lock of another machine cannot be judged: refused.
  writeFileSync(join(dir, "lock"), JSON.stringify({ pid: 1, host: "elsewhere", boot: null, nonce: "x" }));
  assert.match(code(() => FileStore.open(dir)).message, /process 1 on elsewhere/);
  // A lock from before a reboot is stale whatever its pid.
  const boot = existsSync("/proc/sys/kernel/random/boot_id");
  if (boot) {
    writeFileSync(join(dir, "lock"), JSON.stringify({ pid: 1, host: (await import("node:os")).hostname(), boot: "old", nonce: "x" }));
    FileStore.open(dir).close();
  }
  // An empty or zero-filled lock is what a power loss leaves: stale.
  for (const left of ["", "\0\0\0\0"]) {
    writeFileSync(join(dir, "lock"), left);
    FileStore.open(dir).close();
  }
  // Any other unreadable lock is not guessed at.
  writeFileSync(join(dir, "lock"), "pid=12");
  assert.match(code(() => FileStore.open(dir)).message, /unreadable/);
});

// ---- version 1 stores ---------------------------------------------------------------

// A version 1 file: "edgelse1", then records of u32 length, u32 CRC, batch.
function v1File(batches) {
  const parts = [Buffer.from("edgelse1")];
  for (const [put, del] of batches) {
    const b = [Buffer.alloc(4)];
    b[0].writeUInt32LE(put.length);
    for (const [k, v] of put) {
      const kb = Buffer.from(k);
      const vb = Buffer.from(v);
      const l = Buffer.alloc(8);
      l.writeUInt32LE(kb.length, 0);
      l.writeUInt32LE(vb.length, 4);
      b.push(l.subarray(0, 4), kb, l.subarray(4), vb);
    }
    const n = Buffer.alloc(4);
    n.writeUInt32LE(del.length);
    b.push(n);
    for (const k of del) {
      const kb = Buffer.from(k);
      const l = Buffer.alloc(4);
      l.writeUInt32LE(kb.length);
      b.push(l, kb);
    }
    const payload = Buffer.concat(b);
    const h = Buffer.alloc(8);
    h.writeUInt32LE(payload.length, 0);
    h.writeUInt32LE(crc32(payload), 4);
    parts.push(h, payload);
  }
  return Buffer.concat(parts);
}

test("a version 1 store is converted on first open, zero-filled tail included", (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, "snapshot"), v1File([[[["a", "1"], ["b", "2"], ["c", "3"]], []]]));
  writeFileSync(join(dir, "journal"), Buffer.concat([v1File([[[["d", "4"]], ["a"]], [[["b", "22"]], []]]), Buffer.alloc(8)]));
  const want = { b: "22", c: "3", d: "4" };
  const s = FileStore.open(dir);
  assert.deepEqual(entriesAsObject(s.entries()), want);
  assert.deepEqual(readdirSync(dir).sort(), ["journal-2", "lock", "snapshot-2"]);
  s.write({ put: [["e", new Uint8Array([53])]], delete: [] });
  s.close();
  const again = FileStore.open(dir);
  assert.deepEqual(entriesAsObject(again.entries()), { ...want, e: "5" });
  again.close();
});

test("groupCommit: one fsync covers what was appended while the last ran; flush waits for its own writes; a failed fsync fails the lessor", async (t) => {
  const dir = tempDir(t);
  const { held, real: realSync, restore } = holdSyncs(t);
  const settled = async (p) => (await Promise.race([p.then(() => "done", () => "failed"), new Promise((r) => setImmediate(() => r("waiting")))]));
  const finish = (err = null) => {
    const { fd, cb } = held.shift();
    if (err) return cb(err);
    realSync(fd, cb);
  };

  const { store, lessor } = open(dir, undefined, { groupCommit: true });
  assert.equal(store.pipelined, true);
  lessor.put("a", "1");
  lessor.put("b", "1");
  // The operations returned at once; at the end of the turn one fsync
  // starts, covering both.
  assert.equal(lessor.pendingWrites, 2);
  assert.equal(held.length, 0);
  await until(() => held.length === 1);
  lessor.put("c", "1");
  const all = lessor.flush();
  assert.equal(await settled(all), "waiting");
  finish();
  // "c" came while it ran: the next fsync covers it.
  await until(() => held.length === 1 && lessor.pendingWrites === 1);
  assert.equal(await settled(all), "waiting");
  finish();
  await until(() => lessor.pendingWrites === 0);
  assert.equal(await settled(all), "done");

  // flush() waits for the writes made before it, not for later ones. (Two
  // writes per round from here: a lone write after a lone write is synced
  // on the event loop, tested below.)
  lessor.put("d", "1");
  lessor.put("d2", "1");
  const mine = lessor.flush();
  await until(() => held.length === 1);
  lessor.put("e", "1");
  finish();
  await until(() => held.length === 1);
  assert.equal(await settled(mine), "done");
  assert.equal(lessor.pendingWrites, 1);
  finish();
  await until(() => lessor.pendingWrites === 0);

  // A failed fsync: what it covered cannot be trusted to be on disk, so the
  // waiters get StorageFailed and the lessor takes no more changes.
  lessor.put("f", "1");
  lessor.put("f2", "1");
  const lost = lessor.flush();
  await until(() => held.length === 1);
  finish(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }));
  await assert.rejects(lost, (e) => e.code === "StorageFailed");
  assert.throws(() => lessor.put("g", "1"), (e) => e.code === "StorageFailed");
  assert.equal(lessor.get("a").value, "1"); // reads go on
  await store.close();
  lessor.close();

  // Closing syncs what is appended but not yet covered, before it returns.
  const dir2 = tempDir(t);
  const two = open(dir2, undefined, { groupCommit: true });
  two.lessor.put("x", "1");
  await until(() => held.length === 1); // its fsync is held
  two.lessor.put("y", "1"); // queued, not yet appended
  const flushed = two.lessor.flush();
  await two.store.close();
  finish(); // the held one finishes after the close (its fd closes only then)
  await flushed;
  two.lessor.close();
  restore();
  const back = open(dir2);
  assert.deepEqual([back.lessor.get("x")?.value, back.lessor.get("y")?.value], ["1", "1"]);
  await back.store.close();
  back.lessor.close();

  // A failed append (the turn's records in one write) fails the same way,
  // and the journal is cut back to its last good record.
  const dir3 = tempDir(t);
  const three = open(dir3, undefined, { groupCommit: true });
  three.lessor.put("kept", "1");
  await three.lessor.flush();
  const realWriteSync = fs.writeSync;
  fs.writeSync = () => {
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  };
  syncBuiltinESMExports();
  three.lessor.put("p", "1");
  three.lessor.put("q", "1");
  const failed = three.lessor.flush();
  await assert.rejects(failed, (e) => e.code === "StorageFailed");
  fs.writeSync = realWriteSync;
  syncBuiltinESMExports();
  assert.throws(() => three.lessor.put("r", "1"), (e) => e.code === "StorageFailed");
  await three.store.close();
  three.lessor.close();
  const again = open(dir3);
  assert.deepEqual([again.lessor.get("kept")?.value, again.lessor.get("p"), again.lessor.get("q")], ["1", undefined, undefined]);
  await again.store.close();
  again.lessor.close();
});

test("groupCommit: after a slow sync, lone writes are synced on the pool until a sync is fast again", async (t) => {
  const dir = tempDir(t);
  const real = { async: fs.fdatasync, sync: fs.fdatasyncSync };
  const where = [];
  let stallMs = 0;
  const stall = () => {
    for (const end = performance.now() + stallMs; performance.now() < end; );
  };
  fs.fdatasync = (fd, cb) => (where.push("pool"), stall(), real.async(fd, cb));
  fs.fdatasyncSync = (fd) => (where.push("loop"), stall(), real.sync(fd));
  syncBuiltinESMExports();
  t.after(() => {
    fs.fdatasync = real.async;
    fs.fdatasyncSync = real.sync;
    syncBuiltinESMExports();
  });
  const { store, lessor } = open(dir, undefined, { groupCommit: true, loopSyncMaxMs: 200 });
  const put = async (k) => {
    lessor.put(k, "1");
    await lessor.flush();
    return where.at(-1);
  };
  await put("a");
  assert.equal(await put("b"), "loop");
  // The disk stalls: this sync blocks the loop once, the next ones do not.
  stallMs = 250;
  assert.equal(await put("c"), "loop");
  assert.equal(await put("d"), "pool");
  assert.equal(await put("e"), "pool");
  // It is fast again: the first fast sync (on the pool) brings them back.
  stallMs = 0;
  assert.equal(await put("f"), "pool");
  assert.equal(await put("g"), "loop");
  await store.close();
  lessor.close();
  const back = open(dir);
  for (const k of "abcdefg") assert.equal(back.lessor.get(k)?.value, "1", k);
  await back.store.close();
  back.lessor.close();
});

test("groupCommit: a lone write after a lone write is synced on the event loop, not the pool; a failed one fails the lessor", async (t) => {
  const dir = tempDir(t);
  const real = { async: fs.fdatasync, sync: fs.fdatasyncSync };
  const pooled = [];
  let inline = 0;
  let fail = null;
  fs.fdatasync = (fd, cb) => (pooled.push(fd), real.async(fd, cb));
  fs.fdatasyncSync = (fd) => {
    inline++;
    if (fail) throw fail;
    return real.sync(fd);
  };
  syncBuiltinESMExports();
  t.after(() => {
    fs.fdatasync = real.async;
    fs.fdatasyncSync = real.sync;
    syncBuiltinESMExports();
  });
  // (However long a sync takes here: the rule for slow disks is tested below.)
  const { store, lessor } = open(dir, undefined, { groupCommit: true, loopSyncMaxMs: Infinity });
  // The first lone write goes to the pool (nothing says yet that one writer
  // is alone); so does a round of two, and the lone write after it.
  lessor.put("a", "1");
  await lessor.flush();
  lessor.put("b", "1");
  lessor.put("c", "1");
  await lessor.flush();
  lessor.put("d", "1");
  await lessor.flush();
  assert.deepEqual([pooled.length, inline], [3, 0]);
  // A lone write after a lone write: on the event loop, durable when its
  // flush resolves.
  lessor.put("e", "1");
  await lessor.flush();
  lessor.put("f", "1");
  await lessor.flush();
  assert.deepEqual([pooled.length, inline], [3, 2]);
  // Two at once again: the pool.
  lessor.put("g", "1");
  lessor.put("h", "1");
  await lessor.flush();
  assert.deepEqual([pooled.length, inline], [4, 2]);
  lessor.put("i", "1");
  await lessor.flush();
  assert.deepEqual([pooled.length, inline], [5, 2]);
  // A failed sync on the event loop fails the store as one on the pool does.
  fail = Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
  lessor.put("j", "1");
  await assert.rejects(lessor.flush(), (e) => e.code === "StorageFailed");
  assert.throws(() => lessor.put("k", "1"), (e) => e.code === "StorageFailed");
  fail = null;
  await store.close();
  lessor.close();
  fs.fdatasync = real.async;
  fs.fdatasyncSync = real.sync;
  syncBuiltinESMExports();
  const back = open(dir);
  for (const k of ["a", "b", "c", "d", "e", "f", "g", "h", "i"]) assert.equal(back.lessor.get(k)?.value, "1", k);
  await back.store.close();
  back.lessor.close();
});

test("the live journal is extended ahead of its records: a crash leaves a zero tail that open cuts off; close and sealing trim it", async (t) => {
  const dir = tempDir(t);
  const bytes = (n) => new Uint8Array(n).fill(n % 251 || 1);
  const s = FileStore.open(dir);
  const want = {};
  for (let i = 0; i < 20; i++) {
    s.write({ put: [[`k${i}`, bytes(100 + i)]], delete: [] });
    want[`k${i}`] = [...bytes(100 + i)];
  }
  const records = s.sizes.journal;
  const reserved = statSync(liveJournal(dir)).size;
  assert.ok(reserved > records, `the file (${reserved} B) holds space past its records (${records} B)`);
  assert.ok(isZeroFrom(readFileSync(liveJournal(dir)), records), "the reserved space reads as zeros");

  // A crash now: a copy of the directory as the disk has it, lock included.
  const crashed = tempDir(t);
  for (const n of readdirSync(dir)) if (n !== "lock") copyFileSync(join(dir, n), join(crashed, n));
  const again = FileStore.open(crashed);
  const asObject = (entries) => Object.fromEntries([...entries].map(([k, v]) => [k, [...v]]));
  assert.deepEqual(asObject(again.entries()), want, "every record, none from the zeros");
  assert.equal(statSync(liveJournal(crashed)).size, records, "open cut the zero tail off");
  again.write({ put: [["after", bytes(7)]], delete: [] });
  await again.close();
  assert.equal(statSync(liveJournal(crashed)).size, again.sizes.journal, "close trims the reserve");
  const back = FileStore.open(crashed);
  assert.deepEqual(asObject(back.entries()), { ...want, after: [...bytes(7)] });
  await back.close();

  await s.close();

  // A sealed journal whose trim did not reach the disk (zeros after the
  // SEAL) still reads as sealed; anything else after the SEAL is corruption.
  const mid = tempDir(t);
  const m = FileStore.open(mid);
  m.write({ put: [["x", bytes(9)]], delete: [] });
  const stopped = m.compact([["x", bytes(9)]]);
  await m.close();
  await assert.rejects(stopped, { code: "Closed" });
  const sealed = join(mid, "journal-1");
  const sealedBytes = readFileSync(sealed);
  // The file ends with the SEAL record (type 2, empty), not with the reserve.
  const last = sealedBytes.subarray(sealedBytes.length - REC_HEADER);
  assert.deepEqual([last.readUInt32LE(4), last.readUInt32LE(8)], [2, 0], "the sealed journal ends at its SEAL");
  appendFileSync(sealed, Buffer.alloc(4096));
  const z = FileStore.open(mid);
  assert.deepEqual(asObject(z.entries()), { x: [...bytes(9)] });
  await z.close();
  writeFileSync(sealed, Buffer.concat([sealedBytes, Buffer.from([0, 0, 1, 0])]));
  assert.throws(() => FileStore.open(mid), (e) => e.code === "CorruptEntry" && /journal-1@/.test(e.entry));
});

function isZeroFrom(buf, at) {
  for (let i = at; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

test("with the reserve after it: a torn last record is cut off, a damaged one refused; a torn SEAL across a sector boundary is torn", async (t) => {
  const fill = (n, b) => new Uint8Array(n).fill(b);
  const asObject = (entries) => Object.fromEntries([...entries].map(([k, v]) => [k, v.length]));
  const dir = tempDir(t);
  const s = FileStore.open(dir);
  s.write({ put: [["a", fill(50, 1)]], delete: [] });
  const last = s.sizes.journal; // where the last record starts
  s.write({ put: [["b", fill(700, 2)]], delete: [] }); // over two sectors
  const end = s.sizes.journal;
  // The disk as a crash leaves it: the records, then the zero reserve.
  const disk = readFileSync(liveJournal(dir));
  assert.ok(disk.length > end + 4096);
  const open = (bytes) => {
    const d = tempDir(t);
    writeFileSync(join(d, "journal-1"), bytes);
    return FileStore.open(d);
  };
  const damaged = (at, bit) => {
    const b = Buffer.from(disk);
    b[at] ^= bit;
    return b;
  };
  for (const [what, at] of [
    ["a payload bit", last + REC_HEADER + 100],
    ["a header bit", last + 9],
    ["the last payload byte", end - 1],
  ]) {
    assert.throws(() => open(damaged(at, 0x10)), (e) => e.code === "CorruptEntry" && e.entry === `journal-1@${last}`, what);
  }
  // Its second sector never reached the disk: torn, the state before it.
  const sector = end - (end % 512);
  assert.ok(end - sector >= REC_HEADER && sector > last);
  const torn = Buffer.from(disk);
  torn.fill(0, sector, end);
  const t1 = open(torn);
  assert.deepEqual(asObject(t1.entries()), { a: 50 });
  await t1.close();
  // Nothing of it reached the disk: the same.
  const none = Buffer.from(disk);
  none.fill(0, last, end);
  const t2 = open(none);
  assert.deepEqual(asObject(t2.entries()), { a: 50 });
  await t2.close();
  await s.close();

  // A SEAL written at 500 bytes into a sector, its size change on disk but
  // not its bytes: 20 zeros over a sector boundary, a torn tail.
  const d2 = tempDir(t);
  const s2 = FileStore.open(d2);
  const at = s2.sizes.journal + 37; // a one-put record with a one-byte key: 37 bytes and the value
  s2.write({ put: [["c", fill(((500 - at) % 512) + 512, 3)]], delete: [] });
  assert.equal(s2.sizes.journal % 512, 500);
  await s2.close();
  appendFileSync(liveJournal(d2), Buffer.alloc(REC_HEADER));
  const s3 = FileStore.open(d2);
  assert.equal(Object.keys(asObject(s3.entries())).join(), "c");
  assert.equal(statSync(liveJournal(d2)).size % 512, 500, "cut back to the last record");
  await s3.close();
});

test("view(): the state on disk when taken, read elsewhere while writes and a compaction go on", async (t) => {
  const dir = tempDir(t);
  const a = open(dir, { t: T0 }, { compactFactor: 1, minCompactBytes: 1 });
  for (let i = 0; i < 50; i++) a.lessor.put(`k${i}`, `v${i}`);
  await a.store.compactFrom(a.lessor, { force: true }); // a snapshot, then the live journal
  a.lessor.put("k0", "changed");
  const lease = a.lessor.grant(60);
  a.lessor.put("leased", "x", { lease: lease.id });
  a.lessor.delete("k1");
  const want = state(a.lessor);
  const view = a.store.view();
  t.after(() => view.close());
  assert.deepEqual(
    view.files.map((f) => f.kind),
    ["snapshot", "journal"],
  );
  // After the view: more writes, and a compaction that removes its files.
  a.lessor.put("after", "1");
  a.lessor.revoke(lease.id);
  await a.store.compactFrom(a.lessor, { force: true });
  assert.ok(!readdirSync(dir).includes(`journal-${view.files[1].gen}`), "the viewed journal is gone from the directory");
  const seen = new Lessor({ restore: readView(view.files), now: () => T0, autoTick: false });
  t.after(() => seen.close());
  assert.deepEqual(state(seen), want);
  // Read twice: the files are read, not consumed or closed.
  assert.equal([...readView(view.files)].length, seen.snapshot().length);
  view.close();
  view.close(); // (once is enough)
  assert.throws(() => readView(view.files), /EBADF/);
  a.store.close();
});

test("view(): only what an fsync covered (group commit: writes whose sync is held are not in it); a sealed journal is followed", async (t) => {
  const dir = tempDir(t);
  const { held, real: realSync, restore } = holdSyncs(t);
  const store = FileStore.open(dir, { groupCommit: true, loopSyncMaxMs: -1 }); // (every sync on the pool: held here)
  const lessor = new Lessor({ storage: store, restore: store.entries(), now: () => T0, autoTick: false });
  const read = (view) => new Lessor({ restore: readView(view.files), now: () => T0, autoTick: false });
  lessor.put("a", "1");
  await until(() => held.length === 1);
  held.shift().cb(null); // (a's sync done; not truly synced, which is not the point here)
  await lessor.flush();
  lessor.put("b", "2");
  await until(() => held.length === 1); // b appended, its sync under way
  const v1 = store.view();
  t.after(() => v1.close());
  const r1 = read(v1);
  assert.equal(r1.get("a").value, "1");
  assert.equal(r1.get("b"), undefined, "appended, not yet synced");
  r1.close();
  const { fd, cb } = held.shift();
  realSync(fd, cb);
  await lessor.flush();
  const compaction = store.compact(lessor.snapshot()); // seals journal-1 (synced at once); snapshot-2 is written after
  lessor.put("c", "3"); // appended at the end of this turn
  const v2 = store.view();
  t.after(() => v2.close());
  assert.deepEqual(v2.files.map((f) => `${f.kind}-${f.gen}`), ["journal-1", "journal-2"]);
  const r2 = read(v2);
  assert.deepEqual([r2.get("a")?.value, r2.get("b")?.value, r2.get("c")], ["1", "2", undefined]);
  r2.close();
  restore();
  for (const h of held.splice(0)) realSync(h.fd, h.cb);
  await compaction;
  await lessor.flush();
  assert.equal(lessor.get("c").value, "3");
  await store.close();
  lessor.close();
});

test("entries(): long values are read from the files as they are handed over; a value changed or a store closed meanwhile is an error, never another value", async (t) => {
  const base = tempDir(t);
  const dir = join(base, "a");
  const big = new Uint8Array(10_000).fill(7);
  {
    const a = open(dir);
    a.lessor.put("big", big);
    a.lessor.put("small", "x");
    a.lessor.close();
    await a.store.close();
  }
  const copy = (name) => {
    const to = join(base, name);
    mkdirSync(to);
    for (const f of readdirSync(dir)) if (!f.startsWith("lock")) copyFileSync(join(dir, f), join(to, f));
    return to;
  };
  const closedDir = copy("closed");
  const changedDir = copy("changed");

  // Read whole: the same values.
  const s = FileStore.open(dir);
  const back = new Lessor({ storage: s, restore: s.entries(), now: () => T0, autoTick: false });
  assert.deepEqual(back.get("big").value, big);
  assert.equal(back.get("small").value, "x");
  back.close();
  await s.close();

  // The store closed before its entries are read.
  const c = FileStore.open(closedDir);
  const pending = c.entries();
  await c.close();
  assert.throws(() => [...pending], { code: "Closed" });

  // Read once: a second reading is an error, not an empty store.
  const twice = FileStore.open(dir);
  const once = twice.entries();
  assert.equal([...once].length > 0, true);
  assert.throws(() => new Lessor({ storage: twice, restore: once, now: () => T0, autoTick: false }), { code: "InvalidArgument" });
  await twice.close();

  // The files open read are let go when the entries are, however reading
  // ends: all read, a reader that stops early, a failed read.
  const held = (where = dir) =>
    readdirSync("/proc/self/fd").filter((f) => {
      try {
        return readlinkSync(`/proc/self/fd/${f}`).startsWith(where + "/");
      } catch {
        return false;
      }
    }).length;
  // Never asked for, then compacted away: let go with the files.
  const s1 = FileStore.open(dir);
  assert.ok(held() > 1);
  const v = s1.view();
  const all = [...readView(v.files)];
  v.close();
  await s1.compact(all);
  assert.equal(held(), 1, "open's unread entries let go when the store compacts");
  await s1.close();

  const s2 = FileStore.open(dir);
  const live = 1; // the live journal, for appends
  assert.ok(held() > live, `${held()} fds`);
  for (const entry of s2.entries()) if (entry) break;
  assert.equal(held(), live, "a reader that stopped early");
  await s2.close();
  assert.equal(held(), 0);

  // The value's bytes changed in the file after open read them.
  const g = FileStore.open(changedDir);
  const later = g.entries();
  const file = liveJournal(changedDir);
  const bytes = readFileSync(file);
  const at = Buffer.from(bytes).indexOf(Buffer.from(big));
  assert.ok(at > 0);
  bytes.fill(9, at, at + big.length);
  writeFileSync(file, bytes);
  assert.throws(() => [...later], { code: "CorruptEntry" });
  assert.equal(held(changedDir), 1, "a failed read lets the files go");
  await g.close();
});

test("groupCommit: a round of megabytes is appended a part per turn before its fsync; files copied midway open without it; close or a compaction midway finish it", async (t) => {
  const big = "v".repeat(12 << 20); // one record of four steps
  const bigStore = (dir) => {
    const store = FileStore.open(dir, { groupCommit: true });
    const lessor = new Lessor({ storage: store, restore: store.entries(), now: () => T0, autoTick: false, maxValueBytes: 16 << 20 });
    return { store, lessor };
  };
  const turn = () => new Promise((r) => setImmediate(r));
  const reopened = (dir) => {
    const { store, lessor } = bigStore(dir);
    const got = { small: lessor.get("small")?.value, big: lessor.get("big")?.value?.length };
    lessor.close();
    return store.close().then(() => got);
  };

  // Turns of the event loop pass while it is appended; a copy of the files
  // after the first part (a crash there) has the writes before it, not it.
  const dir = tempDir(t);
  let { store, lessor } = bigStore(dir);
  lessor.put("small", "1");
  await lessor.flush();
  lessor.put("big", big);
  let turns = 0;
  let done = false;
  const count = () => {
    turns++;
    if (!done) setImmediate(count);
  };
  setImmediate(count);
  const flushed = lessor.flush().then(() => (done = true));
  await turn();
  assert.equal(lessor.pendingWrites, 1);
  const copy = tempDir(t);
  for (const n of readdirSync(dir)) if (n.startsWith("journal-")) copyFileSync(join(dir, n), join(copy, n));
  assert.deepEqual(await reopened(copy), { small: "1", big: undefined });
  await flushed;
  assert.ok(turns >= 3, `the append took ${turns} turns`);
  lessor.close();
  await store.close();
  assert.deepEqual(await reopened(dir), { small: "1", big: big.length });

  // close() midway makes it durable first.
  ({ store, lessor } = bigStore(dir));
  lessor.delete("big");
  lessor.put("big", big);
  const closedFlush = lessor.flush();
  await turn();
  assert.ok(lessor.pendingWrites > 0);
  lessor.close();
  await store.close();
  await closedFlush;
  assert.deepEqual(await reopened(dir), { small: "1", big: big.length });

  // So does a compaction that seals the journal midway; a write after it
  // goes to the new journal.
  ({ store, lessor } = bigStore(dir));
  lessor.delete("big");
  lessor.put("big", big + "2");
  const sealedFlush = lessor.flush();
  await turn();
  assert.ok(lessor.pendingWrites > 0);
  const compacted = store.compactFrom(lessor, { force: true });
  lessor.put("small", "2");
  await Promise.all([sealedFlush, compacted, lessor.flush()]);
  lessor.close();
  await store.close();
  assert.deepEqual(await reopened(dir), { small: "2", big: big.length + 1 });
});
