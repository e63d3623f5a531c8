// Stores written by earlier releases restore to the state they held: a
// file store written with the text value layout (fixtures/file-store-text,
// kept as that release wrote it), read by this build, written over, and
// compacted into this build's layout. (The core's own fixture of every
// record kind: crates/core/tests/layouts.rs.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lessor } from "edge-lease";
import { FileStore } from "edge-lease/stores/file";
import { AT, T0, script, state } from "./fixtures/file-store-text-script.mjs";

const FIXTURE = new URL("./fixtures/file-store-text/", import.meta.url).pathname;
const WANT = JSON.parse(readFileSync(new URL("./fixtures/file-store-text.json", import.meta.url)));

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "edge-lease-layout-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function open(dir, now) {
  const store = FileStore.open(dir);
  const lessor = new Lessor({ storage: store, restore: store.entries(), now: () => now, autoTick: false });
  return { store, lessor };
}

async function close({ store, lessor }) {
  lessor.close();
  await store.close();
}

test("a file store written with the text layout restores to the state it held", async (t) => {
  const dir = tempDir(t);
  cpSync(FIXTURE, dir, { recursive: true });
  const s = open(dir, AT);
  assert.deepEqual(state(s.lessor), WANT);
  await close(s);
});

test("this build runs the fixture's script to the same state", async (t) => {
  const dir = tempDir(t);
  const clock = { t: T0 };
  const store = FileStore.open(dir);
  const lessor = new Lessor({ storage: store, restore: store.entries(), now: () => clock.t, autoTick: false });
  await script(lessor, store);
  await close({ store, lessor });
  const s = open(dir, AT);
  assert.deepEqual(state(s.lessor), WANT);
  await close(s);
});

test("a text-layout store written over and compacted keeps every write", async (t) => {
  const dir = tempDir(t);
  cpSync(FIXTURE, dir, { recursive: true });
  let s = open(dir, AT);
  s.lessor.put("free", "later", { lease: -1n });
  s.lessor.put("new", new Uint8Array([1, 2, 3]));
  s.lessor.renew(0x123456789abcdef0n);
  await s.lessor.flush();
  const before = state(s.lessor);
  await close(s);
  // Mixed: the records written over in this build's layout, the rest as they were.
  s = open(dir, AT);
  assert.deepEqual(state(s.lessor), before);
  assert.equal(await s.store.compactFrom(s.lessor, { force: true }), true);
  await close(s);
  s = open(dir, AT);
  assert.deepEqual(state(s.lessor), before);
  await close(s);
});
