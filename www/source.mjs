// Which source is on screen: the server the page came from, or this page's
// engine on real or simulated time. Showing a source draws its panels
// afresh and shows its log. The choice lasts for this visit only: a page
// served by a server comes back to it on every load (the lock story, on the
// page's engine, must not take the page away from its server for good).

import { $ } from "./dom.mjs";
import { loadEngine, openReal, reopenReal } from "./engine.mjs";
import { addLog, errorText, makeLog, notice, report } from "./log.mjs";
import { clearPanels, render, syncWhich } from "./panels.mjs";
import { ServerSource } from "./remote.mjs";

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

export function show(state, s) {
  state.active = s;
  if (s.kind === "page") state.lastPage = s;
  for (const log of $("logs").children) log.hidden = log !== s.log;
  clearPanels(state);
  document.body.dataset.source = s.kind;
  document.querySelector(`input[name=source][value=${s.kind}]`).checked = true;
  const isSim = s.clock.kind === "sim";
  document.querySelector(`input[name=mode][value=${isSim ? "sim" : "real"}]`).checked = true;
  for (const b of $("sim-controls").querySelectorAll("button")) b.disabled = !isSim;
  syncWhich(state);
  syncSimButtons(state);
  render(state);
}

export function syncSimButtons(state) {
  const c = state.sim?.clock;
  $("pause").setAttribute("aria-pressed", String(Boolean(c?.paused)));
  $("speed").setAttribute("aria-pressed", String(c?.speed === 10));
}

/** Shows this page's engine: the lessor shown last, else the real-time one. */
export async function usePage(state) {
  await loadEngine(state);
  if (!state.real) await openReal(state);
  show(state, state.lastPage && !state.lastPage.closed ? state.lastPage : state.real);
}

export function useServer(state) {
  state.server ??= openServer();
  show(state, state.server);
}

/** Starts the real-time lessor afresh (its store wiped), still on screen if it was. */
export async function restartReal(state) {
  const shown = state.active === state.real;
  await reopenReal(state);
  if (shown) show(state, state.real);
}

// The server if the page came from one, else this page's engine.
export async function showFirst(state) {
  const hasServer = await detectServer();
  const serverRadio = document.querySelector("input[name=source][value=server]");
  serverRadio.disabled = !hasServer;
  $("server-origin").textContent = hasServer ? location.host : "(none: this page was not served by edge-lease)";
  if (hasServer) useServer(state);
  else await usePage(state);
}
