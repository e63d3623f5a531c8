// The timeline: a time axis with one lane per lease, from its grant to its
// end, a tick at each renewal, the time it has left dashed ahead of the "now"
// line. Now sits at two thirds of the width; the future third is the
// smallest step that holds the longest remaining time, so bars slide left as
// time passes and the scale changes only when the leases need it.

import { el } from "./dom.mjs";

const STEPS = [10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400]; // seconds
const NOW_AT = 2 / 3;
const MAX_LANES = 40;

/** A tick's label; one unit per axis, chosen by its scale (`future`, seconds). */
function span(seconds, future) {
  if (seconds === 0) return "now";
  const sign = seconds < 0 ? "−" : "+";
  const a = Math.abs(seconds);
  const text = future >= 7200 ? `${a / 3600} h` : future >= 120 ? `${a / 60} min` : `${a} s`;
  return sign + text;
}

/** Clamps a position (0..1) for CSS, in percent. */
const pct = (x) => `${(Math.min(Math.max(x, 0), 1) * 100).toFixed(3)}%`;

export class Timeline {
  #lanes = new Map(); // id -> { li, label, life, left, start, renews: [], end, sr, srText }
  #future = 0; // seconds right of now

  constructor({ root, axis, lanes, empty }) {
    this.root = root;
    this.axis = axis;
    this.list = lanes;
    this.empty = empty;
  }

  clear() {
    for (const lane of this.#lanes.values()) lane.li.remove();
    this.#lanes.clear();
    this.#future = 0;
  }

  /**
   * `items`: [{ id, label, start, startKind ("grant" | "seen"), renewals: [ms],
   * end (ms or null), endKind ("expire" | "revoke"), deadline (ms, live only) }],
   * times on the clock `now` is read from.
   */
  render(now, items) {
    let need = 0;
    for (const it of items) if (it.end === null) need = Math.max(need, (it.deadline - now) / 1000);
    const future = STEPS.find((s) => s >= need) ?? STEPS[STEPS.length - 1];
    const width = (future * 1000) / (1 - NOW_AT);
    const from = now - width * NOW_AT;
    const x = (t) => (t - from) / width;
    if (future !== this.#future) {
      this.#future = future;
      this.#axis(future);
    }

    // Ended leases stay until they scroll off the left edge; the newest
    // lanes win when there are too many.
    const shown = items
      .filter((it) => it.end === null || it.end >= from)
      .sort((a, b) => a.start - b.start)
      .slice(-MAX_LANES);
    const ids = new Set(shown.map((it) => it.id));
    for (const [id, lane] of this.#lanes) {
      if (!ids.has(id)) {
        lane.li.remove();
        this.#lanes.delete(id);
      }
    }
    for (const it of shown) {
      let lane = this.#lanes.get(it.id);
      if (!lane) {
        lane = this.#lane(it.id);
        this.#lanes.set(it.id, lane);
        this.list.append(lane.li);
      }
      const end = it.end ?? now;
      const live = it.end === null;
      lane.li.dataset.state = live ? "live" : it.endKind;
      lane.li.dataset.renewals = String(it.renewals.length);
      if (lane.label.textContent !== it.label) {
        lane.label.textContent = it.label;
        lane.label.title = it.label; // ellipsized where the column is narrow
      }
      lane.life.style.left = pct(x(it.start));
      lane.life.style.width = pct(x(end) - Math.max(x(it.start), 0));
      lane.start.style.left = pct(x(it.start));
      lane.start.dataset.kind = it.startKind;
      lane.start.hidden = x(it.start) < 0;
      lane.left.hidden = !live;
      if (live) {
        lane.left.style.left = pct(x(now));
        lane.left.style.width = pct(Math.min(x(it.deadline), 1) - x(now));
      }
      while (lane.renews.length < it.renewals.length) {
        const r = el("span", "tl-mark tl-renew");
        lane.track.append(r);
        lane.renews.push(r);
      }
      it.renewals.forEach((t, i) => {
        lane.renews[i].style.left = pct(x(t));
        lane.renews[i].hidden = x(t) < 0;
      });
      lane.end.hidden = live;
      if (!live) {
        lane.end.style.left = pct(x(end));
        lane.end.dataset.kind = it.endKind;
      }
      // Words for screen readers, rewritten only when the story changes.
      const words =
        `${it.label}: ${it.startKind === "grant" ? "granted" : "seen"}, ` +
        `renewed ${it.renewals.length} ${it.renewals.length === 1 ? "time" : "times"}, ` +
        (live ? "live" : it.endKind === "expire" ? "expired" : "revoked");
      if (lane.srText !== words) {
        lane.srText = words;
        lane.sr.textContent = words;
      }
    }
    this.root.hidden = shown.length === 0;
    this.empty.hidden = shown.length > 0;
  }

  #lane(id) {
    const li = el("li", "tl-lane");
    li.dataset.id = id;
    const label = el("span", "tl-label");
    label.setAttribute("aria-hidden", "true");
    const sr = el("span", "sr-only");
    const track = el("div", "tl-track");
    track.setAttribute("aria-hidden", "true");
    const life = el("span", "tl-life");
    const left = el("span", "tl-left");
    const start = el("span", "tl-mark tl-start");
    const end = el("span", "tl-mark tl-end");
    const nowLine = el("span", "tl-now");
    nowLine.style.left = pct(NOW_AT);
    track.append(life, left, nowLine, start, end);
    li.append(label, sr, track);
    return { li, label, sr, srText: "", track, life, left, start, end, renews: [] };
  }

  #axis(future) {
    const past = future * 2;
    const step = future / 2;
    const ticks = [];
    for (let s = -past; s <= future + 1e-9; s += step) ticks.push(Math.round(s * 100) / 100);
    this.axis.replaceChildren(
      ...ticks.map((s) => {
        const t = el("span", "tl-tick");
        t.textContent = span(s, future);
        t.style.left = pct(NOW_AT + (s / future) * (1 - NOW_AT));
        if (s === 0) t.classList.add("tl-tick-now");
        return t;
      }),
    );
  }
}
