// The history checker of the failover acceptance test: the contenders'
// logs (contender.mjs) judged for safety, and the lock's unavailability
// measured around a fault.
//
// Safety, judged conservatively so that it can fail only when safety broke:
// a holding is [start, end], `start` read after lock()/campaign() resolved
// and `end` read before unlock()/resign() was called, or the session's
// deadline when the session was lost while holding (the client believed
// it held until then). So each logged interval lies inside the time its
// process believed it held. Holdings are ordered by token (the key's create
// revision: the server's order, not the clocks'): tokens must rise with
// start times, each holding must end before the next one starts, and the
// writes guarded by the lock (their revisions come from the server) must
// carry rising tokens in revision order. Two holdings with the same token
// are one holding of one session resumed (an unlock that failed leaves the
// key, and the same session's next lock() finds it), and must have the
// same lease.

/** Every JSON line of every log, parsed. */
export function parseLogs(texts) {
  return texts.flatMap((text) =>
    text
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l)),
  );
}

/** The holdings of `kind` ("lock" or "election"), one per token, in token order. */
export function holdings(events, kind) {
  const byToken = new Map();
  const problems = [];
  for (const e of events) {
    if (e.kind !== kind || e.ev !== "held") continue;
    const h = byToken.get(e.token);
    if (!h) {
      byToken.set(e.token, { token: e.token, lease: e.lease, who: e.who, start: e.start, end: e.end, lost: e.lost, writes: e.wrote === null ? [] : [e.wrote], parts: 1 });
      continue;
    }
    if (h.lease !== e.lease || h.who !== e.who) {
      problems.push(`token ${e.token} held by ${h.who} (lease ${h.lease}) and by ${e.who} (lease ${e.lease})`);
    }
    h.start = Math.min(h.start, e.start);
    h.end = Math.max(h.end, e.end);
    h.lost ||= e.lost;
    if (e.wrote !== null) h.writes.push(e.wrote);
    h.parts++;
  }
  return { list: [...byToken.values()].sort((a, b) => a.token - b.token), problems };
}

/** Safety of `kind`: a list of violations (empty when safe), with the holdings. */
export function checkSafety(events, kind) {
  const { list, problems } = holdings(events, kind);
  const violations = [...problems];
  // (Against the latest end of all lower tokens, not only the previous one.)
  let last = null;
  for (let i = 0; i + 1 < list.length; i++) {
    const [a, b] = [list[i], list[i + 1]];
    if (last === null || a.end > last.end) last = a;
    if (b.start < a.start) violations.push(`${kind}: token ${b.token} (${b.who}) started ${a.start - b.start} ms before the lower token ${a.token} (${a.who})`);
    if (last.end > b.start) {
      violations.push(`${kind}: ${last.who} (token ${last.token}) held until ${last.end}${last.lost ? " (its session's deadline)" : ""}, ${last.end - b.start} ms after ${b.who} (token ${b.token}) took it`);
    }
  }
  // The server's order of the guarded writes: tokens never go down.
  const writes = list.flatMap((h) => h.writes.map((rev) => ({ rev, token: h.token }))).sort((x, y) => x.rev - y.rev);
  for (let i = 0; i + 1 < writes.length; i++) {
    if (writes[i + 1].token < writes[i].token) {
      violations.push(`${kind}: a write guarded by token ${writes[i + 1].token} at revision ${writes[i + 1].rev} came after one by token ${writes[i].token} at ${writes[i].rev}`);
    }
  }
  return { holdings: list, writes: writes.length, violations };
}

/**
 * How long nobody held `kind`, at most, in the idle periods that end after
 * `from` and begin before `to`, each clipped to [from, to].
 * Here every logged holding counts apart, in start order: a holding resumed
 * after a failed unlock (one token, two log lines) was not usable between
 * them.
 */
export function unavailability(events, kind, from, to) {
  const list = events.filter((e) => e.kind === kind && e.ev === "held").sort((a, b) => a.start - b.start);
  let worst = 0;
  let heldUntil = -Infinity;
  for (let i = 0; i + 1 < list.length; i++) {
    heldUntil = Math.max(heldUntil, list[i].end);
    const idleTo = list[i + 1].start;
    if (idleTo <= from || heldUntil >= to) continue;
    worst = Math.max(worst, Math.min(idleTo, to) - Math.max(heldUntil, from));
  }
  // Nobody took it after `from` at all: unavailable for the whole window.
  if (!list.some((h) => h.start >= from)) worst = Math.max(worst, to - from);
  return worst;
}

/** The `error` events of `kind` between `from` and `to`. */
export function errorsBetween(events, kind, from, to) {
  return events.filter((e) => e.ev === "error" && e.kind === kind && e.t >= from && e.t < to);
}
