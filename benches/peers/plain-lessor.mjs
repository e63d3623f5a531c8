// A plain JS lessor: what a JS user would write instead of using edge-lease.
// Map + binary heap with lazy deletion, as etcd's LeaseQueue: renew pushes a
// new heap entry rather than updating one in place, and expiry pops entries,
// skipping the stale ones (whose lease was renewed or is gone).

// Min-heap of { expiry, id } ordered by expiry.
class MinHeap {
  items = [];

  get size() {
    return this.items.length;
  }

  peek() {
    return this.items[0];
  }

  push(item) {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p].expiry <= item.expiry) break;
      a[i] = a[p];
      i = p;
    }
    a[i] = item;
  }

  pop() {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0) {
      // Sift `last` down from the root.
      let i = 0;
      const n = a.length;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && a[r].expiry < a[l].expiry ? r : l;
        if (a[c].expiry >= last.expiry) break;
        a[i] = a[c];
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}

export class PlainLessor {
  // `now` is a function returning milliseconds, so the clock can be injected.
  constructor({ now = () => Date.now() } = {}) {
    this.now = now;
    this.nextId = 1;
    this.leases = new Map(); // id -> { ttl, expiry, keys: Set }
    this.keys = new Map(); // key -> { value, lease }
    this.queue = new MinHeap();
  }

  grant(ttl) {
    const id = this.nextId++;
    const expiry = this.now() + ttl * 1000;
    this.leases.set(id, { ttl, expiry, keys: new Set() });
    this.queue.push({ expiry, id });
    return { id, ttl };
  }

  put(key, value, { lease } = {}) {
    const l = this.leases.get(lease);
    if (l === undefined || l.expiry <= this.now()) throw new Error(`lease ${lease} not found`);
    const old = this.keys.get(key);
    // Re-attaching a key moves it off its previous lease.
    if (old !== undefined && old.lease !== lease) this.leases.get(old.lease)?.keys.delete(key);
    this.keys.set(key, { value, lease });
    l.keys.add(key);
  }

  renew(id) {
    const l = this.leases.get(id);
    const now = this.now();
    if (l === undefined || l.expiry <= now) throw new Error(`lease ${id} not found`);
    l.expiry = now + l.ttl * 1000;
    this.queue.push({ expiry: l.expiry, id });
    return l.ttl;
  }

  get(key) {
    const e = this.keys.get(key);
    if (e === undefined) return undefined;
    // A key whose lease is past its deadline is dead even before a tick.
    const l = this.leases.get(e.lease);
    if (l === undefined || l.expiry <= this.now()) return undefined;
    return e;
  }

  // Revokes every lease whose deadline has passed; returns [{ id, keys }].
  tick() {
    const now = this.now();
    const out = [];
    while (this.queue.size > 0 && this.queue.peek().expiry <= now) {
      const { expiry, id } = this.queue.pop();
      const l = this.leases.get(id);
      if (l === undefined || l.expiry !== expiry) continue; // stale entry
      this.leases.delete(id);
      for (const k of l.keys) this.keys.delete(k);
      out.push({ id, keys: [...l.keys] });
    }
    return out;
  }

  get size() {
    return this.leases.size;
  }
}
