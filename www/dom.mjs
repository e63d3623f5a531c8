// The page's DOM helpers. No framework: rows are built by hand and kept,
// and text is written only when it changed.

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function setText(e, text) {
  if (e.textContent !== text) e.textContent = text;
}

// A lease id: 16 hex digits, or fewer with a minus as Go's %x prints one in
// a lock or election key (a minus only after "/", a space or "(": in
// "instance-01ab..." it is the key's own); and the owner's name that may
// follow it, "(server-7)". The cells they sit in may break long words
// anywhere (so every column fits its panel); each must still read as one word.
const ID = /(?:(?<=^|[/\s(])-)?\b[0-9a-f]{8,16}\b|\([\w-]{1,20}\)/g;

/**
 * setText for text that holds lease ids or keys: each id is kept on one
 * line (a nowrap span), and a key may break after each "/" first (not
 * after its leading one, which would stand alone).
 */
export function setIdText(e, text) {
  if (e.textContent === text) return;
  const parts = [];
  const plain = (t) => {
    t.split(/(?<=\S\/)/).forEach((piece, i) => {
      if (i > 0) parts.push(document.createElement("wbr"));
      parts.push(piece);
    });
  };
  let at = 0;
  for (const m of text.matchAll(ID)) {
    plain(text.slice(at, m.index));
    parts.push(el("span", "nobr", m[0]));
    at = m.index + m[0].length;
  }
  plain(text.slice(at));
  // One child: a table cell shown as a card is a grid, where each child
  // (and each run of text) would take a cell of its own.
  const all = el("span");
  all.append(...parts.filter((p) => p !== ""));
  e.replaceChildren(all);
}

/** A table cell that says its column's name where the table is shown as cards (narrow screens). */
export function cell(tag, label, className = "") {
  const c = el(tag, className);
  if (label) c.dataset.label = label;
  return c;
}

// Removing the row that holds focus would drop focus to <body>: move it to
// the section's heading instead.
export function dropRow(row, heading) {
  if (row.contains(document.activeElement)) $(heading).focus();
  row.remove();
}
