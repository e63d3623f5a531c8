// The Node file store: crash safety under SIGKILL, torn tails, corruption,
// compaction. Lessor time is injected wherever time matters.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor, LeaseError } from "edge-lease";
import { FileStore, crc32 } from "edge-lease/stores/file";

const T0 = 1_700_000_000_000;
const CHILD = new URL("./file-store-child.mjs", import.meta.url);

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

function entriesAsObject(entries) {
  return Object.fromEntries(entries.map(([k, v]) => [k, Buffer.from(v).toString("latin1")]));
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

    const journal = join(dir, "journal");
    const sizeOnDisk = statSync(journal).size;
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
  const full = readFileSync(join(ref, "journal"));
  const recordLen = full.length - good;
  const cuts = [1, 4, 7, 8, 9, recordLen - 1];
  for (const cut of cuts) {
    const dir = join(base, `cut${cut}`);
    writeSome(dir);
    writeFileSync(join(dir, "journal"), full.subarray(0, good + cut));
    const b = open(dir);
    assert.deepEqual(state(b.lessor), want, `cut at ${cut}`);
    assert.equal(statSync(join(dir, "journal")).size, good, "the torn bytes are cut off");
    b.lessor.put("d", "4");
    b.store.close();
    const c = open(dir);
    assert.equal(c.lessor.get("d").value, "4");
    assert.equal(c.lessor.get("c"), undefined);
    c.store.close();
  }
  // A full-length last record whose payload was not all written (zeros).
  const dir = join(base, "zeros");
  writeSome(dir);
  const zeroed = Buffer.from(full);
  zeroed.fill(0, good + 8);
  writeFileSync(join(dir, "journal"), zeroed);
  const z = open(dir);
  assert.deepEqual(state(z.lessor), want);
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

test("a corrupt record before the end is an error naming it", (t) => {
  const dir = tempDir(t);
  writeSome(dir);
  const path = join(dir, "journal");
  const buf = readFileSync(path);
  buf[8 + 8 + 2] ^= 0x40; // in the first record's payload
  writeFileSync(path, buf);
  const e = code(() => FileStore.open(dir));
  assert.equal(e.code, "CorruptEntry");
  assert.equal(e.entry, "journal@8");
  assert.match(e.message, /checksum/);

  buf[8 + 8 + 2] ^= 0x40;
  buf.write("nope", 0);
  writeFileSync(path, buf);
  assert.match(code(() => FileStore.open(dir)).message, /bad magic/);

  // A record whose checksum matches but does not parse as a batch.
  const dir2 = join(dir, "sub");
  writeSome(dir2);
  const p2 = join(dir2, "journal");
  const b2 = readFileSync(p2);
  const len = b2.readUInt32LE(8);
  b2.writeUInt32LE(0xffff, 8 + 8); // absurd put count
  b2.writeUInt32LE(crc32(b2.subarray(16, 16 + len)), 12);
  writeFileSync(p2, b2);
  const e2 = code(() => FileStore.open(dir2));
  assert.equal(e2.entry, "journal@8");
  assert.match(e2.message, /malformed/);
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

test("compaction: journal past N x snapshot is rewritten; state and crash mid-compaction are safe", (t) => {
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
    if (a.store.compactFrom(a.lessor)) {
      compactions++;
      assert.equal(a.store.sizes.journal, 8, "the journal is emptied");
    }
    const { journal, snapshot } = a.store.sizes;
    assert.ok(journal - 8 < Math.max(512, 2 * snapshot) + 400, `journal ${journal} stays bounded`);
  }
  assert.ok(compactions >= 5, `compacted ${compactions} times`);
  const want = state(a.lessor);
  const beforeCompact = readFileSync(join(dir, "journal"));
  const snapshotBefore = a.store.entries();
  a.store.compactFrom(a.lessor, { force: true });
  assert.deepEqual(entriesAsObject(a.store.entries()), entriesAsObject(snapshotBefore));
  a.store.close();

  const b = open(dir, clock);
  assert.deepEqual(state(b.lessor), want);
  b.store.close();

  // Crash after the snapshot was renamed into place but before the journal
  // was emptied: replaying the old journal over the new snapshot is the same.
  writeFileSync(join(dir, "journal"), beforeCompact);
  const c = open(dir, clock);
  assert.deepEqual(state(c.lessor), want);
  c.store.close();

  // A crash before the rename leaves a stray temp file: ignored, overwritten.
  copyFileSync(join(dir, "snapshot"), join(dir, "snapshot.tmp"));
  truncateSync(join(dir, "snapshot.tmp"), 20);
  const d = open(dir, clock, { minCompactBytes: 1 });
  assert.deepEqual(state(d.lessor), want);
  assert.equal(d.store.compactFrom(d.lessor, { force: true }), true);
  d.store.close();
  assert.deepEqual(state(open(dir, clock).lessor), want);
});
