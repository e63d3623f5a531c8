// The demo page: two lessors, one on the wall clock (optionally stored in
// IndexedDB) and one on a simulated clock; the controls that drive them; and
// a view redrawn every frame. No framework: keyed lists updated in place, so
// a button keeps focus while the bars around it move.

import init, { Lessor } from "edge-lease";
import { IndexedDbStore } from "edge-lease/stores/indexeddb";
import { RealClock, Session, SimClock } from "./session.mjs";
import { FencedResource, startLockStory } from "./story.mjs";

const DB = "edge-lease-demo";
const PERSIST_PREF = "edge-lease-demo:persist";
const LOG_LIMIT = 300;
const $ = (id) => document.getElementById(id);

await init();

let real = null; // Session on the wall clock
let sim = null; // Session on a SimClock, made on first use
let active = null; // the one on screen

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

function makeSession(clock, lessor) {
  const s = new Session(clock, lessor);
  s.log = el("ol", "log");
  s.log.setAttribute("role", "log");
  s.log.setAttribute("aria-labelledby", "log-heading");
  s.log.hidden = true;
  $("logs").append(s.log);
  s.onError = (e) => report(s, e);
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

function show(s) {
  active = s;
  for (const log of $("logs").children) log.hidden = log !== s.log;
  for (const row of leaseRows.values()) row.el.remove();
  leaseRows.clear();
  for (const row of keyRows.values()) row.el.remove();
  keyRows.clear();
  const isSim = s.clock.kind === "sim";
  document.querySelector(`input[name=mode][value=${isSim ? "sim" : "real"}]`).checked = true;
  for (const b of $("sim-controls").querySelectorAll("button")) b.disabled = !isSim;
  $("which").textContent = isSim ? "simulated clock, in memory" : s.store ? "real time, IndexedDB" : "real time, in memory";
  syncSimButtons();
  render();
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

function renderLeases(s) {
  const ids = s.lessor.leases();
  const live = new Set(ids);
  for (const [id, row] of leaseRows) {
    if (!live.has(id)) {
      dropRow(row.el, "leases-heading");
      leaseRows.delete(id);
    }
  }
  for (const id of ids) {
    let row = leaseRows.get(id);
    if (!row) {
      // New leases go last; rows never move, so focus never jumps.
      row = leaseRow(id);
      leaseRows.set(id, row);
      $("leases").append(row.el);
    }
    const t = s.lessor.timeToLive(id, { keys: true });
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
  $("no-leases").hidden = ids.length > 0;
}

function renderKeys(s) {
  const entries = s.lessor.range("");
  const live = new Set(entries.map((e) => e.key));
  for (const [key, row] of keyRows) {
    if (!live.has(key)) {
      dropRow(row.el, "keys-heading");
      keyRows.delete(key);
    }
  }
  for (const e of entries) {
    let row = keyRows.get(e.key);
    if (!row) {
      const tr = el("tr");
      tr.dataset.key = e.key;
      const cells = [el("th"), el("td"), el("td"), el("td", "num"), el("td", "num"), el("td", "num")];
      cells[0].scope = "row";
      const del = el("button", "", "Delete");
      del.type = "button";
      del.dataset.action = "delete";
      del.setAttribute("aria-label", `Delete key ${e.key}`);
      const last = el("td");
      last.append(del);
      tr.append(...cells, last);
      row = { el: tr, cells };
      keyRows.set(e.key, row);
      $("keys").append(tr);
    }
    const value = typeof e.value === "string" ? e.value : `${e.value.length} bytes`;
    const texts = [e.key, value, e.lease ? leaseName(s, e.lease) : "none", e.createRevision, e.modRevision, e.version];
    texts.forEach((t, i) => setText(row.cells[i], String(t)));
    row.el.dataset.createRevision = String(e.createRevision);
    row.el.dataset.value = value;
  }
  $("no-keys").hidden = entries.length > 0;
}

let leaseOptions = "";
function renderLeaseSelect(s) {
  const ids = s.lessor.leases();
  const sig = ids.map((id) => leaseName(s, id)).join("|");
  if (sig === leaseOptions) return;
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

function render() {
  const s = active;
  if (!s || s.closed) return;
  const c = s.clock;
  const mode = c.kind === "real" ? "real time" : `simulated, ${c.paused ? "paused" : `×${c.speed}`}`;
  setText($("clock-now"), `${stamp(s)} (${mode})`);
  setText($("revision"), String(s.lessor.revision));
  renderLeases(s);
  renderKeys(s);
  renderLeaseSelect(s);
}

function frame() {
  render();
  requestAnimationFrame(frame);
}

// ---- controls ---------------------------------------------------------------

// Runs a user action on the lessor on screen and reports what it threw.
function act(fn) {
  const s = active;
  if (!s || s.closed) return;
  try {
    fn(s);
  } catch (e) {
    report(s, e);
  }
  render();
}

$("grant-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  act((s) => {
    const { id, ttl } = s.lessor.grant(Number($("grant-ttl").value));
    notice(`Granted lease ${id} with a TTL of ${ttl} s.`);
    render();
    $("put-lease").value = id; // the likely next step: attach a key to it
  });
});

$("put-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  act((s) => {
    const key = $("put-key").value;
    const lease = $("put-lease").value || null;
    const ifAbsent = $("put-if-absent").checked;
    const r = s.lessor.put(key, $("put-value").value, { lease, ifAbsent });
    if (!r.created && ifAbsent) {
      const held = `${key} exists (fencing token ${r.prev.createRevision}): nothing written`;
      notice(`Refused: ${held}.`);
      addLog(s, "refused", held);
    } else {
      notice(`Wrote ${key} at revision ${r.revision}.`);
    }
  });
});

$("leases").addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b) return;
  const id = b.closest("li").dataset.id;
  act((s) => {
    if (b.dataset.action === "renew") s.lessor.renew(id);
    else if (b.dataset.action === "keepalive") s.keepAlive(id, !s.alive.has(id));
    else if (b.dataset.action === "revoke") s.lessor.revoke(id);
  });
});

$("keys").addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action=delete]");
  if (b) act((s) => s.lessor.delete(b.closest("tr").dataset.key));
});

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

$("story").addEventListener("click", () => {
  show(newSim());
  $("resource-rows").replaceChildren();
  setText($("highest-token"), "none");
  const resource = new FencedResource((w) => {
    const tr = el("tr", w.ok ? "accepted" : "rejected");
    tr.dataset.result = w.ok ? "accepted" : "rejected";
    tr.dataset.writer = w.writer;
    tr.dataset.token = String(w.token);
    tr.append(el("td", "time", stamp(sim)), el("td", "", w.writer), el("td", "num", String(w.token)));
    tr.append(el("td", "result", w.ok ? "ACCEPTED" : `REJECTED: token ${w.token} < ${w.highest}`));
    tr.append(el("td", "", w.data));
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
  restartReal().then(
    () => notice($("persist").checked ? "Storing the real-time lessor in IndexedDB, starting afresh." : "Real-time lessor now in memory only; the store was deleted."),
    (e) => report(real, e),
  );
});

$("reset").addEventListener("click", () => {
  if (active === sim) {
    show(newSim());
    notice("Simulated lessor reset.");
    return;
  }
  restartReal().then(() => notice("Real-time lessor reset; its store was wiped."), (e) => report(real, e));
});

// ---- start -------------------------------------------------------------------

$("persist").checked = persistOn();
await openReal();
show(real);
setInterval(drive, 100);
requestAnimationFrame(frame);
