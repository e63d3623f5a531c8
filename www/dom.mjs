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
