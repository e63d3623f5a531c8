// The demo page: a dashboard of one etcd keyspace and its leases, from one
// of three sources: the server the page came from (edge-lease's, watched
// through edge-lease/client), or this page's own engine on the wall clock
// (optionally stored in IndexedDB) or on a simulated clock (the lock story).
// The controls act on the source on screen; the view is redrawn every frame.
// No framework: keyed lists updated in place, so a button keeps focus while
// the bars around it move.

import { lockRows, ordinal } from "./locks.mjs";
import { ServerSource } from "./remote.mjs";
import { RealClock, Session, SimClock } from "./session.mjs";
import { FencedResource, startLockStory } from "./story.mjs";
import { Timeline } from "./timeline.mjs";

const DB = "edge-lease-demo";
const PERSIST_PREF = "edge-lease-demo:persist";
const SOURCE_PREF = "edge-lease-demo:source";
const LOG_LIMIT = 300;
const HISTORY_LIMIT = 200;
const $ = (id) => document.getElementById(id);

// The engine (wasm) loads only when the page's own lessors are first used.
let Lessor = null;
let IndexedDbStore = null;
let engineLoading = null;
function loadEngine() {
  engineLoading ??= (async () => {
    const core = await import("edge-lease");
    await core.default();
    Lessor = core.Lessor;
    ({ IndexedDbStore } = await import("edge-lease/stores/indexeddb"));
  })();
  return engineLoading;
}

let real = null; // Session on the wall clock
let sim = null; // Session on a SimClock, made on first use
let server = null; // ServerSource, if the page came from a server
let lastPage = null; // the page lessor shown last (real or sim)
let active = null; // the source on screen

const timeline = new Timeline({ root: $("timeline"), axis: $("tl-axis"), lanes: $("tl-lanes"), empty: $("no-timeline") });

// ---- small DOM helpers ----------------------------------------------------

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

function setText(e, text) {
  if (e.textContent !== text) e.textContent = text;
}

// Removing the row that holds focus would drop focus to <body>: move it to
// the section's heading instead.
function dropRow(row, heading) {
  if (row.contains(document.activeElement)) $(heading).focus();
  row.remove();
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

/** A session's time as people read it: T+ seconds for simulated time, wall time otherwise. */
function stamp(s) {
  const now = s.clock.now();
  if (s.clock.kind === "sim") return `T+${((now - s.clock.start) / 1000).toFixed(1)} s`;
  const d = new Date(now);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${Math.floor(d.getMilliseconds() / 100)}`;
}

function leaseName(s, id) {
  const owner = s.owners.get(id);
  return owner ? `${id} (${owner})` : id;
}

function pref(name) {
  try {
    return localStorage.getItem(name);
  } catch {
    return null; // storage blocked
  }
}

function setPref(name, value) {
  try {
    localStorage.setItem(name, value);
  } catch {
    // storage blocked: the choice lasts until the page goes
  }
}

function notice(text, isError = false) {
  const st = $("status");
  st.hidden = false;
  st.classList.toggle("error", isError);
  st.textContent = text;
}

function errorText(e) {
  return e && e.code ? `${e.code}: ${e.message}` : String(e && e.message ? e.message : e);
}

// ---- the log --------------------------------------------------------------

function addLog(s, kind, text, revision = 0) {
  const li = el("li", `ev ev-${kind}`);
  li.dataset.kind = kind;
  li.append(el("time", "", stamp(s)), el("span", "tag", kind), el("span", "msg", text));
  if (revision > 0) li.append(el("span", "rev", `rev ${revision}`));
  s.log.prepend(li);
  while (s.log.childElementCount > LOG_LIMIT) s.log.lastElementChild.remove();
}

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

function report(s, e) {
  notice(errorText(e), true);
  if (s && !s.closed) addLog(s, "error", errorText(e));
}

// ---- sessions ------------------------------------------------------------

function makeLog() {
  const log = el("ol", "log");
  log.setAttribute("role", "log");
  log.setAttribute("aria-labelledby", "log-heading");
  log.hidden = true;
  $("logs").append(log);
  return log;
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

function persistOn() {
  try {
    return localStorage.getItem(PERSIST_PREF) !== "0";
  } catch {
    return false; // storage blocked: nothing would survive anyway
  }
}

// ---- the server ----------------------------------------------------------------

/** Whether the page came from an etcd server (edge-lease's): its /version answers. */
async function detectServer() {
  if (!/^https?:$/.test(location.protocol)) return false;
  try {
    const r = await fetch("/version", { signal: AbortSignal.timeout(3000) });
    if (!r.ok) return false;
    const v = await r.json();
    return typeof v.etcdserver === "string";
  } catch {
    return false;
  }
}

function openServer() {
  const src = new ServerSource(location.origin, {
    log: (kind, text, revision) => addLog(src, kind, text, revision),
    error: (e) => report(src, e),
    reach: (ok, e) => {
      if (ok && src.reachable === false) notice(`The server at ${location.host} answers again.`);
      if (!ok) notice(`The server at ${location.host} does not answer (${errorText(e)}); trying again every second.`, true);
    },
  });
  src.log = makeLog();
  addLog(src, "note", `watching the server at ${location.host}: keys through a watch, leases by polling every second`);
  return src;
}

async function openReal() {
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
  real = makeSession(clock, lessor);
  real.store = store;
  $("storage-status").textContent = store ? `Stored in IndexedDB "${DB}".` : "In memory only: a reload starts empty.";
  addLog(real, "note", `real-time lessor ${note}`);
}

// Closes the real-time lessor, wipes the store and opens a fresh one.
async function restartReal() {
  const shown = active === real;
  const old = real;
  real = null;
  try {
    await old.close();
  } catch {
    // Its store failed; that was reported, and replacing it is the remedy.
  }
  old.store?.close();
  old.log.remove();
  await IndexedDbStore.delete(DB);
  await openReal();
  if (shown) show(real);
}

function newSim() {
  const clock = new SimClock(Date.now());
  if (sim) {
    // Keep the controls' settings, drop everything else.
    clock.paused = sim.clock.paused;
    clock.speed = sim.clock.speed;
    sim.close().catch((e) => report(null, e));
    sim.log.remove();
  }
  sim = makeSession(clock, new Lessor({ now: () => clock.now(), autoTick: false }));
  addLog(sim, "note", "simulated lessor started at T+0 s");
  return sim;
}

const leaseRows = new Map(); // lease id -> { el, fill, bar, left, keys, owner, keepAlive }
const keyRows = new Map(); // key -> { el, cells }
const lockRowEls = new Map(); // key -> { el, cells }

function show(s) {
  active = s;
  if (s.kind === "page") lastPage = s;
  for (const log of $("logs").children) log.hidden = log !== s.log;
  for (const rows of [leaseRows, keyRows, lockRowEls]) {
    for (const row of rows.values()) row.el.remove();
    rows.clear();
  }
  keysShown = null;
  timeline.clear();
  document.body.dataset.source = s.kind;
  document.querySelector(`input[name=source][value=${s.kind}]`).checked = true;
  const isSim = s.clock.kind === "sim";
  document.querySelector(`input[name=mode][value=${isSim ? "sim" : "real"}]`).checked = true;
  for (const b of $("sim-controls").querySelectorAll("button")) b.disabled = !isSim;
  syncWhich();
  syncSimButtons();
  render();
}

function syncWhich() {
  const s = active;
  if (!s) return;
  let text;
  if (s.kind === "server") text = `the server at ${location.host}${s.reachable === false ? " (not answering)" : ""}`;
  else if (s.clock.kind === "sim") text = "simulated clock, in memory";
  else text = s.store ? "real time, IndexedDB" : "real time, in memory";
  setText($("which"), text);
}

/** Shows this page's engine: the lessor shown last, else the real-time one. */
async function usePage() {
  await loadEngine();
  if (!real) await openReal();
  show(lastPage && !lastPage.closed ? lastPage : real);
}

function useServer() {
  server ??= openServer();
  show(server);
}

function syncSimButtons() {
  const c = sim?.clock;
  $("pause").setAttribute("aria-pressed", String(Boolean(c?.paused)));
  $("speed").setAttribute("aria-pressed", String(c?.speed === 10));
}

// ---- driving time ---------------------------------------------------------

// Every 100 ms: the wall-clock lessor does what is due; the simulated clock
// moves by the elapsed time times its speed. Rendering is separate (rAF).
let lastDrive = performance.now();
function drive() {
  const t = performance.now();
  const elapsed = t - lastDrive;
  lastDrive = t;
  for (const s of [real, sim]) {
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
  watchStorage();
}

function watchStorage() {
  const s = real;
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

// ---- rendering -------------------------------------------------------------

function leaseRow(id) {
  const li = el("li", "lease");
  li.dataset.id = id;
  const head = el("div", "lease-head");
  const owner = el("span", "owner");
  const left = el("span", "left");
  head.append(el("code", "id", id), owner, left);
  const bar = el("div", "bar");
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-label", `Time left on lease ${id}`);
  bar.setAttribute("aria-valuemin", "0");
  const fill = el("div", "fill");
  bar.append(fill);
  const keys = el("p", "lease-keys");
  const actions = el("div", "row");
  const button = (action, text, label) => {
    const b = el("button", "", text);
    b.type = "button";
    b.dataset.action = action;
    b.setAttribute("aria-label", `${label} lease ${id}`);
    actions.append(b);
    return b;
  };
  button("renew", "Renew", "Renew");
  const keepAlive = button("keepalive", "Keep alive", "Keep alive");
  button("revoke", "Revoke", "Revoke");
  li.append(head, bar, keys, actions);
  return { el: li, fill, bar, left, keys, owner, keepAlive };
}

/** Each live lease of a source: { id, grantedTtl, ttlMs, keys }. */
function leaseViews(s, view) {
  if (s.kind === "server") {
    const now = s.now();
    return [...s.leases.values()].map((l) => ({
      id: l.id,
      grantedTtl: l.grantedTtl,
      ttlMs: Math.max(0, Math.round(s.deadline(l) - now)),
      keys: view.keysBy.get(l.id) ?? [],
    }));
  }
  return s.lessor.leases().map((id) => {
    const t = s.lessor.timeToLive(id, { keys: true });
    return { id, grantedTtl: t.grantedTtl, ttlMs: t.ttlMs, keys: t.keys };
  });
}

// The keyspace as last drawn; rebuilt when the revision moves.
let keysShown = null; // { source, revision, prefix, entries, keysBy }

function keyspace(s) {
  const revision = s.kind === "server" ? s.revision : s.lessor.revision;
  const prefix = $("lock-prefix").value;
  if (keysShown && keysShown.source === s && keysShown.revision === revision && keysShown.prefix === prefix && !keysShown.dirty) {
    return { ...keysShown, changed: false };
  }
  const entries = s.kind === "server" ? [...s.entries.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) : s.lessor.range("");
  const keysBy = new Map();
  for (const e of entries) {
    if (!e.lease) continue;
    if (!keysBy.has(e.lease)) keysBy.set(e.lease, []);
    keysBy.get(e.lease).push(e.key);
  }
  keysShown = { source: s, revision, prefix, entries, keysBy };
  return { ...keysShown, changed: true };
}

function renderLeases(s, leases) {
  const live = new Set(leases.map((l) => l.id));
  for (const [id, row] of leaseRows) {
    if (!live.has(id)) {
      dropRow(row.el, "leases-heading");
      leaseRows.delete(id);
    }
  }
  for (const t of leases) {
    const id = t.id;
    let row = leaseRows.get(id);
    if (!row) {
      // New leases go last; rows never move, so focus never jumps.
      row = leaseRow(id);
      leaseRows.set(id, row);
      $("leases").append(row.el);
    }
    const full = t.grantedTtl * 1000;
    const frac = Math.min(t.ttlMs / full, 1);
    row.fill.style.width = `${(frac * 100).toFixed(2)}%`;
    row.fill.dataset.level = frac > 0.5 ? "ok" : frac > 0.2 ? "low" : "critical";
    row.bar.setAttribute("aria-valuemax", String(t.grantedTtl));
    row.bar.setAttribute("aria-valuenow", (t.ttlMs / 1000).toFixed(0));
    row.el.dataset.ttlMs = String(t.ttlMs);
    const slack = t.ttlMs > full ? " (restored: includes slack, see Storage)" : "";
    setText(row.left, `${(t.ttlMs / 1000).toFixed(1)} s left of ${t.grantedTtl} s${slack}`);
    setText(row.owner, s.owners.get(id) ?? "");
    setText(row.keys, t.keys.length ? `Keys: ${t.keys.join(", ")}` : "No keys attached");
    const alive = s.alive.has(id);
    row.keepAlive.setAttribute("aria-pressed", String(alive));
    setText(row.keepAlive, alive ? "Keeping alive" : "Keep alive");
  }
  $("no-leases").hidden = leases.length > 0;
}

/** A table cell that says its column's name where the table is shown as cards (narrow screens). */
function cell(tag, label, className = "") {
  const c = el(tag, className);
  if (label) c.dataset.label = label;
  return c;
}

function renderKeys(s, view) {
  const { entries } = view;
  const live = new Set(entries.map((e) => e.key));
  for (const [key, row] of keyRows) {
    if (!live.has(key)) {
      dropRow(row.el, "keys-heading");
      keyRows.delete(key);
    }
  }
  let before = null; // rows follow the keys' order (new keys slot in)
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    let row = keyRows.get(e.key);
    if (!row) {
      const tr = el("tr");
      tr.dataset.key = e.key;
      const cells = [
        cell("th", "", "key"),
        cell("td", "Value", "value"),
        cell("td", "Lease", "lease-id"),
        cell("td", "Create rev", "num"),
        cell("td", "Mod rev", "num"),
        cell("td", "Ver", "num"),
      ];
      cells[0].scope = "row";
      const del = el("button", "", "Delete");
      del.type = "button";
      del.dataset.action = "delete";
      del.setAttribute("aria-label", `Delete key ${e.key}`);
      const last = cell("td", "", "actions");
      last.append(del);
      tr.append(...cells, last);
      row = { el: tr, cells };
      keyRows.set(e.key, row);
      $("keys").insertBefore(tr, before);
    }
    before = row.el;
    const value = typeof e.value === "string" ? e.value : `${e.value.length} bytes`;
    const texts = [e.key, value, e.lease ? leaseName(s, e.lease) : "none", e.createRevision, e.modRevision, e.version];
    texts.forEach((t, i) => setText(row.cells[i], String(t)));
    row.el.dataset.createRevision = String(e.createRevision);
    row.el.dataset.value = value;
  }
  $("no-keys").hidden = entries.length > 0;
  setText($("keys-more"), s.kind === "server" && s.truncated ? " The server holds more keys than the page read at the start: changes since show, older keys may not." : "");
}

function renderLocks(s, view) {
  const rows = lockRows(view.entries, view.prefix);
  const live = new Set(rows.map((r) => r.key));
  for (const [key, row] of lockRowEls) {
    if (!live.has(key)) {
      row.el.remove();
      lockRowEls.delete(key);
    }
  }
  const groupSize = new Map();
  for (const r of rows) groupSize.set(r.name, (groupSize.get(r.name) ?? 0) + 1);
  for (const r of rows) {
    let row = lockRowEls.get(r.key);
    if (!row) {
      const tr = el("tr");
      tr.dataset.key = r.key;
      const cells = [cell("th", "", "key"), cell("td", "State"), cell("td", "Token", "num"), cell("td", "Lease", "lease-id")];
      cells[0].scope = "row";
      tr.append(...cells);
      row = { el: tr, cells };
      lockRowEls.set(r.key, row);
    }
    // Holders change places with waiters: rows follow (they hold no buttons).
    $("locks").append(row.el);
    const state = r.place === 0 ? "holds" : `waits (${ordinal(r.place + 1)} in line)`;
    row.el.dataset.state = r.place === 0 ? "holder" : "waiting";
    row.el.dataset.token = String(r.token);
    row.el.dataset.lock = r.name;
    row.el.title = r.key;
    const texts = [r.name, state, String(r.token), r.lease ? leaseName(s, r.lease) : "none"];
    texts.forEach((t, i) => setText(row.cells[i], t));
  }
  $("no-locks").hidden = rows.length > 0;
}

/** The timeline's lanes: each lease the source recorded, live or recently ended. */
function renderTimeline(s, leases) {
  const now = s.clock.now();
  const live = new Map(leases.map((l) => [l.id, l]));
  // Leases that were there before the page looked (restored, or on the
  // server already): they began at their last renewal, as far as we know.
  for (const l of leases) {
    if (!s.history.has(l.id)) {
      s.history.set(l.id, { start: now + l.ttlMs - l.grantedTtl * 1000, startKind: "seen", renewals: [], end: null, endKind: null, ttl: l.grantedTtl });
    }
  }
  const items = [];
  for (const [id, h] of s.history) {
    const l = live.get(id);
    if (h.end === null && !l) continue; // gone, its end not yet known
    items.push({ id, label: s.owners.has(id) ? `${s.owners.get(id)} (${id})` : id, ...h, deadline: l ? now + l.ttlMs : null });
  }
  if (s.history.size > HISTORY_LIMIT) {
    // Forget the oldest ended leases.
    const ended = [...s.history].filter(([, h]) => h.end !== null).sort((a, b) => a[1].end - b[1].end);
    for (const [id] of ended.slice(0, s.history.size - HISTORY_LIMIT)) s.history.delete(id);
  }
  timeline.render(now, items);
}

let leaseOptions = "";
let wantLease = null; // a lease just granted: preselected once it shows
function renderLeaseSelect(s, leases) {
  const ids = leases.map((l) => l.id);
  const sig = ids.map((id) => leaseName(s, id)).join("|");
  if (sig !== leaseOptions) {
    leaseOptions = sig;
    const select = $("put-lease");
    const chosen = select.value;
    select.replaceChildren(el("option", "", "No lease (stays)"));
    select.firstChild.value = "";
    for (const id of ids) {
      const o = el("option", "", `lease ${leaseName(s, id)}`);
      o.value = id;
      select.append(o);
    }
    select.value = ids.includes(chosen) ? chosen : "";
  }
  if (wantLease && ids.includes(wantLease)) {
    $("put-lease").value = wantLease; // the likely next step: attach a key to it
    wantLease = null;
  }
}

function render() {
  const s = active;
  if (!s || s.closed) return;
  const c = s.clock;
  const mode = s.kind === "server" ? "real time, this browser's clock" : c.kind === "real" ? "real time" : `simulated, ${c.paused ? "paused" : `×${c.speed}`}`;
  setText($("clock-now"), `${stamp(s)} (${mode})`);
  const view = keyspace(s);
  setText($("revision"), String(view.revision));
  const leases = leaseViews(s, view);
  renderLeases(s, leases);
  if (view.changed) {
    renderKeys(s, view);
    renderLocks(s, view);
  }
  renderTimeline(s, leases);
  renderLeaseSelect(s, leases);
  syncWhich();
}

function frame() {
  render();
  requestAnimationFrame(frame);
}

// ---- controls ---------------------------------------------------------------

// Runs a user action on the source on screen and reports what it threw. The
// page's lessors answer at once (and the view is redrawn before the handler
// returns); the server's answers are promises.
function act(fn) {
  const s = active;
  if (!s || s.closed) return;
  let r;
  try {
    r = fn(s);
  } catch (e) {
    report(s, e);
  }
  if (r && typeof r.then === "function") {
    r.then(
      () => render(),
      (e) => report(s, e),
    );
  }
  render();
}

$("grant-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const ttl = Number($("grant-ttl").value);
  const granted = ({ id, ttl }) => {
    notice(`Granted lease ${id} with a TTL of ${ttl} s.`);
    wantLease = id;
    render();
  };
  act((s) => (s.kind === "server" ? s.grant(ttl).then(granted) : granted(s.lessor.grant(ttl))));
});

$("put-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const key = $("put-key").value;
  const value = $("put-value").value;
  const lease = $("put-lease").value || null;
  const ifAbsent = $("put-if-absent").checked;
  act((s) => {
    const done = (r) => {
      if (!r.created && ifAbsent) {
        const held = `${key} exists (fencing token ${r.prev.createRevision}): nothing written`;
        notice(`Refused: ${held}.`);
        addLog(s, "refused", held);
      } else {
        notice(`Wrote ${key} at revision ${r.revision}.`);
      }
    };
    return s.kind === "server" ? s.put(key, value, { lease, ifAbsent }).then(done) : done(s.lessor.put(key, value, { lease, ifAbsent }));
  });
});

$("leases").addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b) return;
  const id = b.closest("li").dataset.id;
  act((s) => {
    if (b.dataset.action === "keepalive") return s.keepAlive(id, !s.alive.has(id));
    if (s.kind === "server") return b.dataset.action === "renew" ? s.renew(id) : s.revoke(id);
    if (b.dataset.action === "renew") s.lessor.renew(id);
    else if (b.dataset.action === "revoke") s.lessor.revoke(id);
  });
});

$("keys").addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action=delete]");
  if (!b) return;
  const key = b.closest("tr").dataset.key;
  act((s) => (s.kind === "server" ? s.delete(key) : s.lessor.delete(key)));
});

for (const radio of document.querySelectorAll("input[name=source]")) {
  radio.addEventListener("change", () => {
    if (!radio.checked) return;
    setPref(SOURCE_PREF, radio.value);
    if (radio.value === "server") useServer();
    else usePage().catch((e) => report(null, e));
  });
}

$("lock-prefix").addEventListener("input", () => render());

for (const radio of document.querySelectorAll("input[name=mode]")) {
  radio.addEventListener("change", () => {
    if (radio.checked) show(radio.value === "sim" ? (sim ?? newSim()) : real);
  });
}

$("pause").addEventListener("click", () => {
  sim.clock.paused = !sim.clock.paused;
  syncSimButtons();
  render();
});

$("speed").addEventListener("click", () => {
  sim.clock.speed = sim.clock.speed === 10 ? 1 : 10;
  syncSimButtons();
  render();
});

for (const [id, ms] of [["step1", 1000], ["step10", 10_000]]) {
  $(id).addEventListener("click", () => act((s) => s.advanceTo(s.clock.now() + ms)));
}

$("story").addEventListener("click", async () => {
  if (!Lessor) {
    // The story runs on this page's engine: load it first.
    setPref(SOURCE_PREF, "page");
    await usePage();
  }
  show(newSim());
  $("resource-rows").replaceChildren();
  setText($("highest-token"), "none");
  const resource = new FencedResource((w) => {
    const tr = el("tr", w.ok ? "accepted" : "rejected");
    tr.dataset.result = w.ok ? "accepted" : "rejected";
    tr.dataset.writer = w.writer;
    tr.dataset.token = String(w.token);
    const td = (label, className, text) => {
      const c = cell("td", label, className);
      c.textContent = text;
      return c;
    };
    tr.append(td("Time", "time", stamp(sim)), td("Writer", "", w.writer), td("Token", "num", String(w.token)));
    tr.append(td("Result", "result", w.ok ? "ACCEPTED" : `REJECTED: token ${w.token} < ${w.highest}`));
    tr.append(td("Data", "", w.data));
    $("resource-rows").append(tr);
    setText($("highest-token"), String(w.highest));
    addLog(sim, w.ok ? "accepted" : "rejected", `resource ${w.ok ? "accepted" : "REJECTED"} ${w.writer}'s write with token ${w.token}`);
  });
  startLockStory(sim, resource, (who, text) => addLog(sim, "story", `${who} ${text}`));
  act((s) => s.runDue()); // T+0 happens now, even on a paused clock
  notice("Lock story started on the simulated clock.");
});

$("persist").addEventListener("change", () => {
  try {
    localStorage.setItem(PERSIST_PREF, $("persist").checked ? "1" : "0");
  } catch (e) {
    report(active, e);
    return;
  }
  if (!real) return; // not started yet: it starts with the new setting
  restartReal().then(
    () => notice($("persist").checked ? "Storing the real-time lessor in IndexedDB, starting afresh." : "Real-time lessor now in memory only; the store was deleted."),
    (e) => report(real, e),
  );
});

$("reset").addEventListener("click", () => {
  if (active.kind !== "page") return;
  if (active === sim) {
    show(newSim());
    notice("Simulated lessor reset.");
    return;
  }
  restartReal().then(() => notice("Real-time lessor reset; its store was wiped."), (e) => report(real, e));
});

// ---- start -------------------------------------------------------------------

// The server if the page came from one (unless this page's engine was
// chosen last time), else this page's engine.
$("persist").checked = persistOn();
const hasServer = await detectServer();
const serverRadio = document.querySelector("input[name=source][value=server]");
serverRadio.disabled = !hasServer;
$("server-origin").textContent = hasServer ? location.host : "(none: this page was not served by edge-lease)";
if (hasServer && pref(SOURCE_PREF) !== "page") useServer();
else await usePage();
setInterval(drive, 100);
requestAnimationFrame(frame);
