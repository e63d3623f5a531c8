// This page's own engine: the wasm lessor, loaded on first use; a lessor on
// the wall clock (kept in IndexedDB unless that is turned off) and one on a
// simulated clock, each a Session with its own log and timeline record; and
// the loop that hands them time. They live in the page's state (app.mjs).

import { $, setText } from "./dom.mjs";
import { addLog, errorText, leaseName, makeLog, notice, report } from "./log.mjs";
import { RealClock, Session, SimClock } from "./session.mjs";

const DB = "edge-lease-demo";
const PERSIST_PREF = "edge-lease-demo:persist";

// The engine (wasm) loads only when the page's own lessors are first used.
export function loadEngine(state) {
  state.engineLoading ??= (async () => {
    const core = await import("edge-lease");
    await core.default();
    state.Lessor = core.Lessor;
    ({ IndexedDbStore: state.IndexedDbStore } = await import("edge-lease/stores/indexeddb"));
  })();
  return state.engineLoading;
}

export function persistOn() {
  try {
    return localStorage.getItem(PERSIST_PREF) !== "0";
  } catch {
    return false; // storage blocked: nothing would survive anyway
  }
}

/** Remembers whether to store the real-time lessor; throws where storage is blocked. */
export function setPersist(on) {
  localStorage.setItem(PERSIST_PREF, on ? "1" : "0");
}

// ---- sessions ------------------------------------------------------------

const describe = {
  grant: (s, e) => `lease ${leaseName(s, e.lease)} granted, TTL ${e.ttl} s`,
  renew: (s, e) => `lease ${leaseName(s, e.lease)} renewed, TTL ${e.ttl} s`,
  revoke: (s, e) => `lease ${leaseName(s, e.lease)} revoked${keysGone(e.keys)}`,
  expire: (s, e) => `lease ${leaseName(s, e.lease)} expired${keysGone(e.keys)}`,
  put: (s, e) => `${e.key} written${e.lease ? ` on lease ${leaseName(s, e.lease)}` : " (no lease)"}`,
  delete: (s, e) => `${e.key} deleted`,
};

function keysGone(keys) {
  return keys.length ? `; deleted ${keys.join(", ")}` : "";
}

function makeSession(clock, lessor) {
  const s = new Session(clock, lessor);
  s.kind = "page";
  s.log = makeLog();
  s.onError = (e) => report(s, e);
  // The timeline's record: grant, renewals and end of each lease.
  s.history = new Map();
  lessor.addEventListener("grant", (e) => {
    s.history.set(e.lease, { start: clock.now(), startKind: "grant", renewals: [], end: null, endKind: null, ttl: e.ttl });
  });
  lessor.addEventListener("renew", (e) => s.history.get(e.lease)?.renewals.push(clock.now()));
  for (const type of ["revoke", "expire"]) {
    lessor.addEventListener(type, (e) => {
      const h = s.history.get(e.lease);
      if (h) Object.assign(h, { end: clock.now(), endKind: type });
    });
  }
  for (const type of Object.keys(describe)) {
    // A revision only where the keyspace changed: a lease that goes without
    // keys reports the current revision, which would read as a change.
    lessor.addEventListener(type, (e) => {
      const changed = e.type === "put" || e.type === "delete" || e.keys.length > 0;
      addLog(s, type, describe[type](s, e), changed ? e.revision : 0);
    });
  }
  return s;
}

export async function openReal(state) {
  const { Lessor, IndexedDbStore } = state;
  const clock = new RealClock();
  const now = () => clock.now();
  let store = null;
  let lessor;
  let note;
  if (persistOn()) {
    try {
      store = await IndexedDbStore.open(DB);
      lessor = new Lessor({ now, autoTick: false, storage: store, restore: store.entries() });
      note = store.entries().length === 0
        ? `IndexedDB "${DB}" is empty: starting afresh; changes are stored as they happen`
        : `restored from IndexedDB "${DB}": revision ${lessor.revision}, ` +
          `${lessor.leases().length} live leases, ${lessor.range().length} keys ` +
          "(leases whose time ran out while the page was closed expire now)";
    } catch (e) {
      store?.close();
      store = null;
      lessor = new Lessor({ now, autoTick: false });
      note = "running in memory: the stored state could not be restored";
      notice(`Could not restore from IndexedDB (${errorText(e)}). "Reset this lessor" clears the store.`, true);
    }
  } else {
    lessor = new Lessor({ now, autoTick: false });
    note = "in memory: a reload starts empty";
  }
  const real = makeSession(clock, lessor);
  state.real = real;
  real.store = store;
  $("storage-status").textContent = store ? `Stored in IndexedDB "${DB}".` : "In memory only: a reload starts empty.";
  addLog(real, "note", `real-time lessor ${note}`);
}

// Closes the real-time lessor, wipes the store and opens a fresh one.
export async function reopenReal(state) {
  const old = state.real;
  state.real = null;
  try {
    await old.close();
  } catch {
    // Its store failed; that was reported, and replacing it is the remedy.
  }
  old.store?.close();
  old.log.remove();
  await state.IndexedDbStore.delete(DB);
  await openReal(state);
}

export function newSim(state) {
  const clock = new SimClock(Date.now());
  const old = state.sim;
  if (old) {
    // Keep the controls' settings, drop everything else.
    clock.paused = old.clock.paused;
    clock.speed = old.clock.speed;
    old.close().catch((e) => report(null, e));
    old.log.remove();
  }
  state.sim = makeSession(clock, new state.Lessor({ now: () => clock.now(), autoTick: false }));
  addLog(state.sim, "note", "simulated lessor started at T+0 s");
  return state.sim;
}

// ---- driving time ---------------------------------------------------------

// Every 100 ms: the wall-clock lessor does what is due; the simulated clock
// moves by the elapsed time times its speed. Rendering is separate (rAF).
export function drive(state) {
  const t = performance.now();
  const elapsed = t - state.lastDrive;
  state.lastDrive = t;
  for (const s of [state.real, state.sim]) {
    if (!s || s.closed || s.failed) continue;
    try {
      if (s.clock.kind === "real") s.runDue();
      else if (!s.clock.paused) s.advanceTo(s.clock.now() + elapsed * s.clock.speed);
    } catch (e) {
      // tick() throws only when storage failed; the lessor now refuses writes.
      s.failed = e;
      report(s, e);
    }
  }
  watchStorage(state.real);
}

function watchStorage(s) {
  if (!s || s.closed || !s.store || s.flushing) return;
  s.flushing = true;
  s.lessor.flush().then(
    () => {
      if (!s.closed) setText($("storage-status"), `Stored in IndexedDB "${DB}" up to revision ${s.lessor.revision}.`);
    },
    (e) => {
      if (!s.failed) {
        s.failed = e;
        report(s, e);
      }
      setText($("storage-status"), `Storage failed (${e.message}). "Reset this lessor" starts over.`);
    },
  ).finally(() => {
    s.flushing = false;
  });
}
