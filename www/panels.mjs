// The panels, drawn from the source on screen: the summary (clock, revision,
// which lessor), the leases with their bars, the keys, the locks, the
// timeline and the put form's lease choices. Keyed lists updated in place,
// so a button keeps focus while the bars around it move. What was drawn
// last is the page state's `drawn` (app.mjs).

import { $, cell, dropRow, el, setIdText, setText } from "./dom.mjs";
import { lockRows, standing } from "./locks.mjs";
import { leaseName, stamp } from "./log.mjs";

const HISTORY_LIMIT = 200;

/** Forgets every row drawn, for a source about to be drawn afresh. */
export function clearPanels(state) {
  const d = state.drawn;
  for (const rows of [d.leaseRows, d.keyRows, d.lockRowEls]) {
    for (const row of rows.values()) row.el.remove();
    rows.clear();
  }
  d.keysShown = null;
  d.timeline.clear();
}

export function syncWhich(state) {
  const s = state.active;
  if (!s) return;
  let text;
  if (s.kind === "server") text = `the server at ${location.host}${s.reachable === false ? " (not answering)" : ""}`;
  else if (s.clock.kind === "sim") text = "simulated clock, in memory";
  else text = s.store ? "real time, IndexedDB" : "real time, in memory";
  setText($("which"), text);
}

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
function keyspace(state, s) {
  const d = state.drawn;
  const revision = s.kind === "server" ? s.revision : s.lessor.revision;
  const prefix = $("lock-prefix").value;
  if (d.keysShown && d.keysShown.source === s && d.keysShown.revision === revision && d.keysShown.prefix === prefix) {
    return { ...d.keysShown, changed: false };
  }
  const entries = s.kind === "server" ? [...s.entries.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) : s.lessor.range("");
  const keysBy = new Map();
  for (const e of entries) {
    if (!e.lease) continue;
    if (!keysBy.has(e.lease)) keysBy.set(e.lease, []);
    keysBy.get(e.lease).push(e.key);
  }
  d.keysShown = { source: s, revision, prefix, entries, keysBy };
  return { ...d.keysShown, changed: true };
}

function renderLeases(state, s, leases) {
  const { leaseRows } = state.drawn;
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
    setIdText(row.keys, t.keys.length ? `Keys: ${t.keys.join(", ")}` : "No keys attached");
    const alive = s.alive.has(id);
    row.keepAlive.setAttribute("aria-pressed", String(alive));
    setText(row.keepAlive, alive ? "Keeping alive" : "Keep alive");
  }
  $("no-leases").hidden = leases.length > 0;
}

function renderKeys(state, s, view) {
  const { keyRows } = state.drawn;
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
    // The key and the lease hold ids: never broken inside one.
    texts.forEach((t, i) => (i === 0 || i === 2 ? setIdText : setText)(row.cells[i], String(t)));
    row.el.dataset.createRevision = String(e.createRevision);
    row.el.dataset.value = value;
  }
  $("no-keys").hidden = entries.length > 0;
  setText($("keys-more"), s.kind === "server" && s.truncated ? " The server holds more keys than the page read at the start: changes since show, older keys may not." : "");
}

function renderLocks(state, s, view) {
  const { lockRowEls } = state.drawn;
  const rows = lockRows(view.entries, view.prefix);
  const live = new Set(rows.map((r) => r.key));
  for (const [key, row] of lockRowEls) {
    if (!live.has(key)) {
      row.el.remove();
      lockRowEls.delete(key);
    }
  }
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
    row.el.dataset.state = r.place === 0 ? "owner" : "waiting";
    row.el.dataset.kind = r.kind;
    row.el.dataset.token = String(r.token);
    row.el.dataset.lock = r.name;
    row.el.title = r.key;
    const texts = [r.name, standing(r), String(r.token), r.lease ? leaseName(s, r.lease) : "none"];
    texts.forEach((t, i) => (i === 0 || i === 3 ? setIdText : setText)(row.cells[i], t));
  }
  $("no-locks").hidden = rows.length > 0;
}

/** The timeline's lanes: each lease the source recorded, live or recently ended. */
function renderTimeline(state, s, leases) {
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
  state.drawn.timeline.render(now, items);
}

function renderLeaseSelect(state, s, leases) {
  const d = state.drawn;
  const ids = leases.map((l) => l.id);
  const sig = ids.map((id) => leaseName(s, id)).join("|");
  if (sig !== d.leaseOptions) {
    d.leaseOptions = sig;
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
  if (state.wantLease && ids.includes(state.wantLease)) {
    $("put-lease").value = state.wantLease; // the likely next step: attach a key to it
    state.wantLease = null;
  }
}

export function render(state) {
  const s = state.active;
  if (!s || s.closed) return;
  const c = s.clock;
  const mode = s.kind === "server" ? "real time, this browser's clock" : c.kind === "real" ? "real time" : `simulated, ${c.paused ? "paused" : `×${c.speed}`}`;
  setText($("clock-now"), `${stamp(s)} (${mode})`);
  const view = keyspace(state, s);
  setText($("revision"), String(view.revision));
  const leases = leaseViews(s, view);
  renderLeases(state, s, leases);
  if (view.changed) {
    renderKeys(state, s, view);
    renderLocks(state, s, view);
  }
  renderTimeline(state, s, leases);
  renderLeaseSelect(state, s, leases);
  syncWhich(state);
}
