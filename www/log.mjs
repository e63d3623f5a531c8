// What the page tells people as things happen: each source's Events log
// (only the one on screen is visible) and the status line; and the words
// both use for a source's time and its leases.

import { $, el, setIdText } from "./dom.mjs";

const LOG_LIMIT = 300;

const pad = (n, w = 2) => String(n).padStart(w, "0");

/** A session's time as people read it: T+ seconds for simulated time, wall time otherwise. */
export function stamp(s) {
  const now = s.clock.now();
  if (s.clock.kind === "sim") return `T+${((now - s.clock.start) / 1000).toFixed(1)} s`;
  const d = new Date(now);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${Math.floor(d.getMilliseconds() / 100)}`;
}

export function leaseName(s, id) {
  const owner = s.owners.get(id);
  return owner ? `${id} (${owner})` : id;
}

export function notice(text, isError = false) {
  const st = $("status");
  st.hidden = false;
  st.classList.toggle("error", isError);
  st.textContent = text;
}

export function errorText(e) {
  return e && e.code ? `${e.code}: ${e.message}` : String(e && e.message ? e.message : e);
}

/** A source's log, hidden until its source is shown. */
export function makeLog() {
  const log = el("ol", "log");
  log.setAttribute("role", "log");
  log.setAttribute("aria-labelledby", "log-heading");
  log.hidden = true;
  $("logs").append(log);
  return log;
}

export function addLog(s, kind, text, revision = 0) {
  const li = el("li", `ev ev-${kind}`);
  li.dataset.kind = kind;
  const msg = el("span", "msg");
  setIdText(msg, text); // keys and lease ids: never broken inside an id
  li.append(el("time", "", stamp(s)), el("span", "tag", kind), msg);
  if (revision > 0) li.append(el("span", "rev", `rev ${revision}`));
  s.log.prepend(li);
  while (s.log.childElementCount > LOG_LIMIT) s.log.lastElementChild.remove();
}

export function report(s, e) {
  notice(errorText(e), true);
  if (s && !s.closed) addLog(s, "error", errorText(e));
}
