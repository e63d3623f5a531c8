// What the page's controls do. Each acts on the source on screen; the
// lock story and the storage switch act on this page's engine.

import { $, cell, el, setText } from "./dom.mjs";
import { newSim, setPersist } from "./engine.mjs";
import { addLog, notice, report, stamp } from "./log.mjs";
import { render } from "./panels.mjs";
import { restartReal, show, syncSimButtons, usePage, useServer } from "./source.mjs";
import { protectedResource, startLockStory } from "./story.mjs";

// Runs a user action on the source on screen and reports what it threw. The
// page's lessors answer at once (and the view is redrawn before the handler
// returns); the server's answers are promises.
function act(state, fn) {
  const s = state.active;
  if (!s || s.closed) return;
  let r;
  try {
    r = fn(s);
  } catch (e) {
    report(s, e);
  }
  if (r && typeof r.then === "function") {
    r.then(
      () => render(state),
      (e) => report(s, e),
    );
  }
  render(state);
}

export function wireControls(state) {
  $("grant-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const ttl = Number($("grant-ttl").value);
    const granted = ({ id, ttl }) => {
      notice(`Granted lease ${id} with a TTL of ${ttl} s.`);
      state.wantLease = id;
      render(state);
    };
    act(state, (s) => (s.kind === "server" ? s.grant(ttl).then(granted) : granted(s.lessor.grant(ttl))));
  });

  $("put-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const key = $("put-key").value;
    const value = $("put-value").value;
    const lease = $("put-lease").value || null;
    const ifAbsent = $("put-if-absent").checked;
    act(state, (s) => {
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
    act(state, (s) => {
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
    act(state, (s) => (s.kind === "server" ? s.delete(key) : s.lessor.delete(key)));
  });

  for (const radio of document.querySelectorAll("input[name=source]")) {
    radio.addEventListener("change", () => {
      if (!radio.checked) return;
      if (radio.value === "server") useServer(state);
      else usePage(state).catch((e) => report(null, e));
    });
  }

  $("lock-prefix").addEventListener("input", () => render(state));

  for (const radio of document.querySelectorAll("input[name=mode]")) {
    radio.addEventListener("change", () => {
      if (radio.checked) show(state, radio.value === "sim" ? (state.sim ?? newSim(state)) : state.real);
    });
  }

  $("pause").addEventListener("click", () => {
    state.sim.clock.paused = !state.sim.clock.paused;
    syncSimButtons(state);
    render(state);
  });

  $("speed").addEventListener("click", () => {
    state.sim.clock.speed = state.sim.clock.speed === 10 ? 1 : 10;
    syncSimButtons(state);
    render(state);
  });

  for (const [id, ms] of [["step1", 1000], ["step10", 10_000]]) {
    $(id).addEventListener("click", () => act(state, (s) => s.advanceTo(s.clock.now() + ms)));
  }

  $("story").addEventListener("click", async () => {
    // The story runs on this page's engine, shown for this visit only: the
    // server (if any) stays watched, and the switch or a reload comes back to it.
    if (!state.real) await usePage(state);
    show(state, newSim(state));
    $("resource-rows").replaceChildren();
    setText($("highest-token"), "none");
    const record = (w) => {
      const tr = el("tr", w.ok ? "accepted" : "rejected");
      tr.dataset.result = w.ok ? "accepted" : "rejected";
      tr.dataset.writer = w.writer;
      tr.dataset.token = String(w.token);
      tr.dataset.where = w.where;
      const td = (label, className, text) => {
        const c = cell("td", label, className);
        c.textContent = text;
        return c;
      };
      tr.append(td("Time", "time", stamp(state.sim)), td("Writer", "", w.writer), td("Token", "num", String(w.token)));
      tr.append(td("Where", "", w.where), td("Result", "result", w.ok ? "ACCEPTED" : `REJECTED: ${w.note}`));
      tr.append(td("Data", "", w.data));
      $("resource-rows").append(tr);
      if (w.where === "resource" && w.ok) setText($("highest-token"), String(w.token));
      addLog(state.sim, w.ok ? "accepted" : "rejected", `${w.where} ${w.ok ? "accepted" : "REJECTED"} ${w.writer}'s write with token ${w.token} (${w.note})`);
    };
    const resource = { ...protectedResource(record), onGuarded: record };
    startLockStory(state.sim, resource, (who, text) => addLog(state.sim, "story", `${who} ${text}`));
    act(state, (s) => s.runDue()); // T+0 happens now, even on a paused clock
    notice("Lock story started on the simulated clock.");
  });

  $("persist").addEventListener("change", () => {
    try {
      setPersist($("persist").checked);
    } catch (e) {
      report(state.active, e);
      return;
    }
    if (!state.real) return; // not started yet: it starts with the new setting
    restartReal(state).then(
      () => notice($("persist").checked ? "Storing the real-time lessor in IndexedDB, starting afresh." : "Real-time lessor now in memory only; the store was deleted."),
      (e) => report(state.real, e),
    );
  });

  $("reset").addEventListener("click", () => {
    if (state.active.kind !== "page") return;
    if (state.active === state.sim) {
      show(state, newSim(state));
      notice("Simulated lessor reset.");
      return;
    }
    restartReal(state).then(() => notice("Real-time lessor reset; its store was wiped."), (e) => report(state.real, e));
  });
}
