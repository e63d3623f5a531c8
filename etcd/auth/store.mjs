// etcd 3.4's auth store (auth/store.go): users (a bcrypt hash, roles),
// roles (key permissions), whether auth is on, and the auth revision, which
// every change but turning auth on moves. Each operation answers and
// refuses as etcd's does, in etcd's order; the root rules: auth goes on
// only with a user "root" that has the role "root", and while it is on
// neither can be deleted nor the role revoked from the user.
//
// Kept in the engine's store as one host entry (JSON), so a restart keeps
// it and a change is one atomic write: at most 1 MiB, which is thousands of
// users and roles; a change that would pass it is refused.
import { Code, Etcd, GrpcError } from "../errors.mjs";
import { encodeBase64, decodeBase64 } from "edge-lease/base64";
import { checkPassword, hashPassword, spendAsIfChecking } from "./passwords.mjs";
import { mergedPerms } from "./permissions.mjs";

export const ROOT = "root";
const ENTRY = "auth";
// A host entry's most (a KV-backed Durable Object stores less: its host says).
const MAX_ENTRY_BYTES = 1024 * 1024;
// authpb.Permission.Type
export const PERM_TYPES = ["READ", "WRITE", "READWRITE"];

const encoder = new TextEncoder();
/** Go's string order: the UTF-8 bytes. */
export function goCompare(a, b) {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
const bytesEqual = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const bytesCompare = (a, b) => {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
};
const bytes = (b) => (b instanceof Uint8Array ? b : new Uint8Array(0));
/** A wire Permission.Type (a name, or a number) as its number. */
const typeNumber = (t) => (typeof t === "number" ? t : Math.max(0, PERM_TYPES.indexOf(t ?? "READ")));

const fresh = () => ({ enabled: false, enabledKey: false, revision: 1, users: new Map(), roles: new Map() });

/**
 * The auth state `lessor` keeps, or a fresh one (auth off, revision 1, as
 * etcd starts): { enabled, enabledKey (etcd's flag was ever written),
 * revision, users, roles }, name -> { name, password (a bcrypt hash, or
 * null), roles (in Go's order), noPassword } and name -> { name, perms: [{
 * type (authpb's number), key, rangeEnd }] }.
 */
export function readAuthState(lessor) {
  const raw = lessor.hostEntry(ENTRY);
  if (raw === undefined) return fresh();
  try {
    const doc = JSON.parse(new TextDecoder().decode(raw));
    const bad = () => {
      throw new Error("a field is missing or of the wrong type");
    };
    const b64 = (s) => decodeBase64(s, bad);
    return {
      enabled: doc.enabled === true,
      enabledKey: doc.enabled === true || doc.enabled === false,
      revision: Number.isSafeInteger(doc.revision) ? doc.revision : bad(),
      users: new Map(doc.users.map(([name, password, roles, noPassword]) => [name, { name, password, roles, noPassword: noPassword === 1 }])),
      roles: new Map(doc.roles.map(([name, perms]) => [name, { name, perms: perms.map(([type, key, end]) => ({ type, key: b64(key), rangeEnd: b64(end) })) }])),
    };
  } catch (e) {
    throw new Error(`edge-lease: the stored auth state is unreadable (${e.message})`);
  }
}

function encode(s) {
  const doc = {
    enabled: s.enabledKey ? s.enabled : null,
    revision: s.revision,
    users: [...s.users.values()].map((u) => [u.name, u.password, u.roles, u.noPassword ? 1 : 0]),
    roles: [...s.roles.values()].map((r) => [r.name, r.perms.map((p) => [p.type, encodeBase64(p.key), encodeBase64(p.rangeEnd)])]),
  };
  return encoder.encode(JSON.stringify(doc));
}

const copy = (s) => ({
  ...s,
  users: new Map([...s.users].map(([k, u]) => [k, { ...u, roles: [...u.roles] }])),
  roles: new Map([...s.roles].map(([k, r]) => [k, { ...r, perms: [...r.perms] }])),
});

export class AuthStore {
  #lessor;
  #tokens;
  #cost;
  #maxBytes;
  #s;
  // user -> merged permissions, rebuilt after each change (etcd's rangePermCache)
  #perms = new Map();

  /**
   * `tokens`: tokens.mjs's SimpleTokens; `bcryptCost`: passwords.mjs's
   * bcryptCost(); `maxBytes`: the most the stored state may take.
   */
  constructor({ lessor, tokens, bcryptCost, maxBytes = MAX_ENTRY_BYTES }) {
    this.#maxBytes = Math.min(maxBytes, MAX_ENTRY_BYTES);
    this.#lessor = lessor;
    this.#tokens = tokens;
    this.#cost = bcryptCost;
    this.#s = readAuthState(lessor);
    if (this.#s.enabled) tokens.enable();
  }

  get enabled() {
    return this.#s.enabled;
  }
  get revision() {
    return this.#s.revision;
  }
  user(name) {
    return this.#s.users.get(name) ?? null;
  }
  isRoot(user) {
    return user.roles.includes(ROOT);
  }
  /** `name`'s merged permissions (permissions.mjs), or null for no such user. */
  permsOf(name) {
    let p = this.#perms.get(name);
    if (p === undefined) {
      const u = this.user(name);
      if (!u) return null;
      p = mergedPerms(u.roles, (r) => this.#s.roles.get(r));
      this.#perms.set(name, p);
    }
    return p;
  }

  // A change: made on a copy, stored, then taken (a refused write changes nothing).
  #change(fn, { bump = true } = {}) {
    const next = copy(this.#s);
    fn(next);
    if (bump) next.revision++;
    const bytes = encode(next);
    if (bytes.length > this.#maxBytes) {
      throw new GrpcError(Code.ResourceExhausted, `edge-lease: the users and roles would take more than ${this.#maxBytes} bytes, the most kept`);
    }
    this.#lessor.setHostEntry(ENTRY, bytes);
    this.#s = next;
    this.#perms.clear();
  }

  enable() {
    if (this.#s.enabled) return;
    const root = this.user(ROOT);
    if (!root) throw Etcd.rootUserNotExist();
    if (!this.isRoot(root)) throw Etcd.rootRoleNotExist();
    // (etcd's revision stays as it is.)
    this.#change((s) => ((s.enabled = true), (s.enabledKey = true)), { bump: false });
    this.#tokens.enable();
  }

  disable() {
    if (!this.#s.enabled) return;
    this.#change((s) => ((s.enabled = false), (s.enabledKey = true)));
    this.#tokens.disable();
  }

  /**
   * etcd's CheckPassword then its Authenticate: a token for `name`, after
   * `beforeApply()` (the caller's own token is read there, as etcd reads it
   * when it proposes the request). Checked again if the store changed
   * while the password was being checked. `index`: the token's index.
   */
  async authenticate(name, password, beforeApply, index) {
    for (;;) {
      if (!this.enabled) throw Etcd.authNotEnabled();
      const user = this.user(name);
      if (!user) {
        await spendAsIfChecking(password, this.#cost);
        throw Etcd.authFailed();
      }
      if (user.noPassword) throw Etcd.noPasswordUser();
      const checked = this.revision;
      if (!(await checkPassword(password, user.password))) throw Etcd.authFailed();
      beforeApply();
      if (!this.enabled) throw Etcd.authNotEnabled();
      const now = this.user(name);
      if (!now || now.noPassword) throw Etcd.authFailed();
      const token = this.#tokens.assign(name, index());
      if (checked === this.revision) return token;
    }
  }

  async userAdd(req) {
    const name = req.name ?? "";
    if (name === "") throw Etcd.userEmpty();
    const noPassword = Boolean(req.options?.no_password);
    const password = noPassword ? null : await hashPassword(req.password ?? "", this.#cost);
    if (this.user(name)) throw Etcd.userAlreadyExist();
    this.#change((s) => s.users.set(name, { name, password, roles: [], noPassword }));
  }

  userDelete(req) {
    const name = req.name ?? "";
    if (this.enabled && name === ROOT) throw Etcd.invalidAuthMgmt();
    if (!this.user(name)) throw Etcd.userNotFound();
    this.#change((s) => s.users.delete(name));
    this.#tokens.invalidateUser(name);
  }

  async userChangePassword(req) {
    const name = req.name ?? "";
    const password = await hashPassword(req.password ?? "", this.#cost);
    if (!this.user(name)) throw Etcd.userNotFound();
    this.#change((s) => s.users.set(name, { ...s.users.get(name), password }));
    this.#tokens.invalidateUser(name);
  }

  userGrantRole(req) {
    const [name, role] = [req.user ?? "", req.role ?? ""];
    const user = this.user(name);
    if (!user) throw Etcd.userNotFound();
    if (role !== ROOT && !this.#s.roles.has(role)) throw Etcd.roleNotFound();
    if (user.roles.includes(role)) return;
    this.#change((s) => (s.users.get(name).roles = [...user.roles, role].sort(goCompare)));
  }

  userGet(req) {
    const user = this.user(req.name ?? "");
    if (!user) throw Etcd.userNotFound();
    return [...user.roles];
  }

  userList() {
    return [...this.#s.users.keys()].sort(goCompare);
  }

  userRevokeRole(req) {
    const [name, role] = [req.name ?? "", req.role ?? ""];
    if (this.enabled && name === ROOT && role === ROOT) throw Etcd.invalidAuthMgmt();
    const user = this.user(name);
    if (!user) throw Etcd.userNotFound();
    if (!user.roles.includes(role)) throw Etcd.roleNotGranted();
    this.#change((s) => (s.users.get(name).roles = user.roles.filter((r) => r !== role)));
  }

  roleAdd(req) {
    const name = req.name ?? "";
    if (name === "") throw Etcd.roleEmpty();
    if (this.#s.roles.has(name)) throw Etcd.roleAlreadyExist();
    this.#change((s) => s.roles.set(name, { name, perms: [] }));
  }

  roleGet(req) {
    const role = this.#s.roles.get(req.role ?? "");
    if (!role) throw Etcd.roleNotFound();
    return role.perms;
  }

  /** etcd's getAllRoles ranges over the bucket from "\0" to "\xff": a name from byte 0xff on is left out. */
  roleList() {
    return [...this.#s.roles.keys()].filter((n) => encoder.encode(n)[0] !== 0xff).sort(goCompare);
  }

  roleDelete(req) {
    const name = req.role ?? "";
    if (this.enabled && name === ROOT) throw Etcd.invalidAuthMgmt();
    if (!this.#s.roles.has(name)) throw Etcd.roleNotFound();
    this.#change((s) => {
      s.roles.delete(name);
      for (const u of s.users.values()) u.roles = u.roles.filter((r) => r !== name);
    });
  }

  /**
   * As etcd: the permission with the first key not below the new one is
   * updated if key and range_end are the same, else the new one is added
   * and the list sorted by key (stably).
   */
  roleGrantPermission(req) {
    const role = this.#s.roles.get(req.name ?? "");
    if (!role) throw Etcd.roleNotFound();
    // (etcd 3.4 crashes on a grant with no permission: refused here.)
    if (!req.perm) throw new GrpcError(Code.InvalidArgument, "edge-lease: the permission to grant is missing");
    const perm = { type: typeNumber(req.perm.permType), key: bytes(req.perm.key), rangeEnd: bytes(req.perm.range_end) };
    this.#change((s) => {
      const perms = s.roles.get(role.name).perms;
      const i = perms.findIndex((p) => bytesCompare(p.key, perm.key) >= 0);
      if (i >= 0 && bytesEqual(perms[i].key, perm.key) && bytesEqual(perms[i].rangeEnd, perm.rangeEnd)) perms[i] = { ...perms[i], type: perm.type };
      else {
        perms.push(perm);
        perms.sort((a, b) => bytesCompare(a.key, b.key));
      }
    });
  }

  roleRevokePermission(req) {
    const role = this.#s.roles.get(req.role ?? "");
    if (!role) throw Etcd.roleNotFound();
    const [key, end] = [bytes(req.key), bytes(req.range_end)];
    const kept = role.perms.filter((p) => !bytesEqual(p.key, key) || !bytesEqual(p.rangeEnd, end));
    if (kept.length === role.perms.length) throw Etcd.permissionNotGranted();
    this.#change((s) => (s.roles.get(role.name).perms = kept));
  }
}
