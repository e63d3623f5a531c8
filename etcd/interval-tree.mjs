// The interval tree etcd 3.4 keeps a user's permissions and a Txn's
// deletes in (pkg/adt: a red-black tree of [begin, end) by begin, each node
// with the largest end below it), built here for its answers, not its
// speed. For a proper range
// its searches find exactly the intervals that meet it; for an empty or
// inverted one (range_end at or before key) the search prunes subtrees by
// bounds that no longer hold, so which permissions it reaches, and so
// etcd's answer, depends on the tree's shape. That shape is reproduced:
// the same insertions in the same order, the same rotations, and each
// node's largest end updated at the same steps (an update stops where a
// node's value does not change).
//
// Keys compare with `compare`, etcd's affine order (the empty key is past
// every other).

export class IntervalTree {
  root = null;
  #compare;

  constructor(compare) {
    this.#compare = compare;
  }

  /** Adds [begin, end). */
  insert(begin, end) {
    const cmp = this.#compare;
    const z = { begin, end, max: end, red: true, left: null, right: null, parent: null };
    let y = null;
    for (let x = this.root; x; x = cmp(begin, x.begin) < 0 ? x.left : x.right) y = x;
    z.parent = y;
    if (!y) this.root = z;
    else {
      if (cmp(begin, y.begin) < 0) y.left = z;
      else y.right = z;
      this.#updateMax(y);
    }
    this.#fixup(z);
  }

  /** Each interval the search for `q` reaches that meets it, in begin order: [{ begin, end }]. */
  stab(q) {
    const out = [];
    this.#visit(this.root, q, (n) => out.push({ begin: n.begin, end: n.end }));
    return out;
  }

  /** Whether the search for `q` ({ begin, end }) meets some interval (adt's Intersects). */
  intersects(q) {
    let x = this.root;
    while (x && this.#relation(q, x) !== 0) x = x.left && this.#compare(x.left.max, q.begin) > 0 ? x.left : x.right;
    return x !== null;
  }

  /** Whether the intervals the search for `q` reaches cover it without a gap (adt's Contains). */
  contains(q) {
    const cmp = this.#compare;
    let minBegin = null;
    let maxEnd = null;
    let contiguous = true;
    this.#visit(this.root, q, (n) => {
      if (minBegin === null) {
        [minBegin, maxEnd] = [n.begin, n.end];
        return true;
      }
      if (cmp(maxEnd, n.begin) < 0) return (contiguous = false);
      if (cmp(n.end, maxEnd) > 0) maxEnd = n.end;
      return true;
    });
    return contiguous && minBegin !== null && cmp(maxEnd, q.end) >= 0 && cmp(minBegin, q.begin) <= 0;
  }

  // -1: `a` lies left of `b`; 1: right of it; 0: they meet.
  #relation(a, b) {
    const cmp = this.#compare;
    if (cmp(a.begin, b.begin) < 0 && cmp(a.end, b.begin) <= 0) return -1;
    if (cmp(a.begin, b.end) >= 0) return 1;
    return 0;
  }

  // In begin order, the nodes the search for `q` reaches that meet it;
  // false once `fn` says stop.
  #visit(x, q, fn) {
    if (!x) return true;
    const v = this.#relation(q, x);
    if (v < 0) return this.#visit(x.left, q, fn);
    if (v > 0) {
      // (Into the subtrees only if [x.begin, x.max) meets q.)
      if (this.#relation({ begin: x.begin, end: x.max }, q) !== 0) return true;
      return this.#visit(x.left, q, fn) && this.#visit(x.right, q, fn);
    }
    return this.#visit(x.left, q, fn) && fn(x) && this.#visit(x.right, q, fn);
  }

  #updateMax(x) {
    const cmp = this.#compare;
    for (; x; x = x.parent) {
      let max = x.end;
      if (x.left && cmp(x.left.max, max) > 0) max = x.left.max;
      if (x.right && cmp(x.right.max, max) > 0) max = x.right.max;
      if (cmp(x.max, max) === 0) return;
      x.max = max;
    }
  }

  #fixup(z) {
    const red = (n) => Boolean(n?.red);
    while (red(z.parent)) {
      const p = z.parent;
      const g = p.parent;
      const left = p === g.left;
      const uncle = left ? g.right : g.left;
      if (red(uncle)) {
        uncle.red = false;
        p.red = false;
        g.red = true;
        z = g;
        continue;
      }
      if (z === (left ? p.right : p.left)) {
        z = p;
        this.#rotate(z, left);
      }
      z.parent.red = false;
      z.parent.parent.red = true;
      this.#rotate(z.parent.parent, !left);
    }
    this.root.red = false;
  }

  // Moves x below its right child (`toLeft`) or its left child.
  #rotate(x, toLeft) {
    const y = toLeft ? x.right : x.left;
    if (!y) return;
    const inner = toLeft ? y.left : y.right;
    if (toLeft) x.right = inner;
    else x.left = inner;
    if (inner) inner.parent = x;
    this.#updateMax(x);
    y.parent = x.parent;
    if (!x.parent) this.root = y;
    else {
      if (x === x.parent.left) x.parent.left = y;
      else x.parent.right = y;
      this.#updateMax(x.parent);
    }
    x.parent = y;
    if (toLeft) y.left = x;
    else y.right = x;
    this.#updateMax(y);
  }
}
