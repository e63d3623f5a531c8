// The auth store as etcd 3.4 keeps it in its backend, for `etcdctl snapshot
// save` (services/snapshot.mjs): the bucket "auth" (authEnabled: one byte,
// once auth was ever turned on; authRevision: 8 bytes big-endian), and
// "authUsers" and "authRoles", each record its name and its authpb message
// as gogoproto writes it (fields in order, empty ones left out; a user's
// options always written). `etcdctl snapshot restore` gives a real etcd the
// same users, passwords and roles.
import { readAuthState } from "./store.mjs";

const encoder = new TextEncoder();

class Writer {
  constructor() {
    this.out = [];
  }
  varint(n) {
    let v = BigInt.asUintN(64, BigInt(n));
    for (; v >= 0x80n; v >>= 7n) this.out.push(Number(v & 0x7fn) | 0x80);
    this.out.push(Number(v));
    return this;
  }
  /** Field `field` as a varint, left out when 0. */
  number(field, n) {
    return n ? this.varint(field << 3).varint(n) : this;
  }
  /** Field `field` as bytes, left out when empty unless `always`. */
  bytes(field, b, always = false) {
    if (!b.length && !always) return this;
    this.varint((field << 3) | 2).varint(b.length);
    for (const x of b) this.out.push(x);
    return this;
  }
  done() {
    return Uint8Array.from(this.out);
  }
}

/** authpb.User. */
function user(u) {
  const w = new Writer().bytes(1, encoder.encode(u.name));
  if (u.password) w.bytes(2, encoder.encode(u.password));
  for (const r of u.roles) w.bytes(3, encoder.encode(r), true);
  return w.bytes(4, new Writer().number(1, u.noPassword ? 1 : 0).done(), true).done();
}

/** authpb.Role. */
function role(r) {
  const w = new Writer().bytes(1, encoder.encode(r.name));
  for (const p of r.perms) w.bytes(2, new Writer().number(1, p.type).bytes(2, p.key).bytes(3, p.rangeEnd).done(), true);
  return w.done();
}

/** { auth, authUsers, authRoles }: each bucket's [key, value] records, for boltFile. */
export function authBuckets(lessor) {
  const s = readAuthState(lessor);
  const revision = new Uint8Array(8);
  new DataView(revision.buffer).setBigUint64(0, BigInt(s.revision));
  const auth = [[encoder.encode("authRevision"), revision]];
  if (s.enabledKey) auth.push([encoder.encode("authEnabled"), Uint8Array.of(s.enabled ? 1 : 0)]);
  return {
    auth,
    authUsers: [...s.users.values()].map((u) => [encoder.encode(u.name), user(u)]),
    authRoles: [...s.roles.values()].map((r) => [encoder.encode(r.name), role(r)]),
  };
}
