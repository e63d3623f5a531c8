// Layout checks shared by the browser tests, measured from element boxes in
// the page: every table column inside its panel, and lease ids that never
// break across lines.

import assert from "node:assert/strict";

/** Boxes of what the layout checks need, measured in the page. */
export function measure(page) {
  return page.evaluate(() => {
    const box = (e) => {
      const r = e.getBoundingClientRect();
      return { top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right, width: r.width, height: r.height };
    };
    const tables = {};
    for (const t of document.querySelectorAll("main table")) {
      if (t.getClientRects().length === 0) continue; // not shown (another source's)
      const section = t.closest("section");
      const inner = section.getBoundingClientRect();
      const cells = [...t.querySelectorAll("tbody tr")].flatMap((tr) => [...tr.children].map((c) => ({ box: box(c), text: c.textContent })));
      tables[section.id] = {
        panel: { left: inner.left, right: inner.right },
        headers: [...t.querySelectorAll("thead th")].map((th) => box(th)),
        headersShown: getComputedStyle(t.tHead).clip === "auto" && t.tHead.getBoundingClientRect().height > 2,
        cells,
      };
    }
    return {
      viewport: { width: innerWidth, height: innerHeight },
      scrollWidth: document.documentElement.scrollWidth,
      leases: box(document.getElementById("leases-panel")),
      firstLease: document.querySelector("#leases li") ? box(document.querySelector("#leases li")) : null,
      story: box(document.getElementById("story-panel")),
      storyButton: box(document.getElementById("story")),
      tables,
    };
  });
}

/** Every column of every table is on screen, inside its panel, none cut. */
export function assertColumnsVisible(m) {
  for (const [id, t] of Object.entries(m.tables)) {
    if (t.headersShown) {
      for (const h of t.headers) {
        assert.ok(h.width > 0 && h.left >= t.panel.left - 0.5 && h.right <= t.panel.right + 0.5, `${id}: a column header at ${h.left}..${h.right} outside the panel ${t.panel.left}..${t.panel.right}`);
      }
    }
    for (const c of t.cells) {
      assert.ok(c.box.left >= t.panel.left - 0.5 && c.box.right <= t.panel.right + 0.5, `${id}: cell "${c.text}" at ${c.box.left}..${c.box.right} outside the panel ${t.panel.left}..${t.panel.right}`);
      assert.ok(c.box.right <= m.viewport.width, `${id}: cell "${c.text}" ends at ${c.box.right}, past the screen`);
    }
  }
}


/**
 * Each lease id on screen (16 hex digits; a key's suffix in Go's %x may be
 * shorter) that is broken across lines, or sticks out of its panel (the
 * header, a section): [] when none. Ids inside a box that clips (a
 * timeline label ellipsized) count only for the part shown.
 */
export function brokenIds(page) {
  return page.evaluate(() => {
    const found = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/-?\b[0-9a-f]{12,16}\b/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        if (rects.length === 0) continue; // not shown
        const where = node.parentElement.closest("[id], tr, li")?.id || node.parentElement.closest("tr, li")?.dataset.key || node.parentElement.tagName;
        const tops = new Set(rects.map((r) => Math.round(r.top)));
        if (tops.size > 1) found.push(`${m[0]} in ${where}: on ${tops.size} lines`);
        const panel = node.parentElement.closest("section, header").getBoundingClientRect();
        const clips = node.parentElement.closest(".tl-label");
        const right = Math.max(...rects.map((r) => r.right));
        if (!clips && (right > panel.right + 0.5 || right > innerWidth)) found.push(`${m[0]} in ${where}: ends at ${right}, past its panel (${panel.right}) or the screen`);
      }
    }
    return found;
  });
}

/**
 * Boxes that overlap where they sit side by side: the timeline's axis
 * labels, the parts of a lease's head, of an event, of the summary, and the
 * cells of a table row: [] when none.
 */
export function overlaps(page) {
  return page.evaluate(() => {
    const found = [];
    const groups = [".tl-axis", ".lease-head", ".ev", ".summary", "main tr"];
    for (const parent of document.querySelectorAll(groups.join(", "))) {
      const boxes = [...parent.children]
        .map((e) => [e, e.getBoundingClientRect()])
        .filter(([, r]) => r.width > 0 && r.height > 0);
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const [a, ra] = boxes[i];
          const [b, rb] = boxes[j];
          const x = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
          const y = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
          if (x > 0.5 && y > 0.5) found.push(`"${a.textContent.trim().slice(0, 30)}" and "${b.textContent.trim().slice(0, 30)}" overlap (${parent.className || parent.tagName})`);
        }
      }
    }
    return found;
  });
}
