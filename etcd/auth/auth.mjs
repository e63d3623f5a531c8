// One namespace's auth: the store of users and roles (store.mjs), its
// simple tokens (tokens.mjs), and the checks etcd makes of a caller, named
// per method in etcd/methods.mjs and applied by `authorize`: who the
// caller's token names, and what that user may read, write or administer.
//
// A caller's token is the gRPC metadata `token`, else `authorization`; on
// the JSON gateway the header `Grpc-Metadata-Token`, else `Authorization`
// (its whole value: etcd's gateway clients send the token bare). A call
// without one is nobody's: refused ("user name is empty") wherever auth
// asks for a user while it is on. A token that names nobody (a wrong or
// expired one, or any token while auth is off) is refused ("invalid auth
// token") by every method that reads it.
import { Etcd, unmapped } from "../errors.mjs";
import { AuthStore } from "./store.mjs";
import { SimpleTokens } from "./tokens.mjs";
import { bcryptCost as costOf, DEFAULT_BCRYPT_COST } from "./passwords.mjs";
import { permitted } from "./permissions.mjs";
import { leaseIn } from "../services/common.mjs";

/**
 * `lessor`: the engine (its host entry keeps the store); `tokenTtlMs`
 * (--auth-token-ttl), `bcryptCost` (--bcrypt-cost), `now` (the tokens'
 * clock, ms), `maxStateBytes` (the most the users and roles may take, as
 * stored: 1 MiB at most).
 */
export function createAuth({ lessor, tokenTtlMs, bcryptCost = DEFAULT_BCRYPT_COST, now = Date.now, maxStateBytes }) {
  const tokens = new SimpleTokens({ ttlMs: tokenTtlMs, now, ...savedTokens(lessor) });
  const store = new AuthStore({ lessor, tokens, bcryptCost: costOf(bcryptCost), maxBytes: maxStateBytes });

  // etcd's isOpPermitted: anyone while auth is off; root everywhere.
  function allowed(who, key, rangeEnd, type) {
    if (!store.enabled) return;
    if (who === null) throw Etcd.userEmpty();
    const user = store.user(who.name);
    if (!user) throw Etcd.permissionDenied();
    if (store.isRoot(user)) return;
    if (!permitted(store.permsOf(who.name), key, rangeEnd, type)) throw Etcd.permissionDenied();
  }

  const auth = {
    store,
    tokens,
    get enabled() {
      return store.enabled;
    },

    /**
     * The user a credential names ({ name, revision }): a token (one that
     * names nobody is refused), or a verified client certificate's
     * `{ commonName }` (the gRPC transport's, with --client-cert-auth);
     * null without one.
     */
    identify(token) {
      if (token === undefined || token === null) return null;
      if (typeof token === "object") return { name: token.commonName, revision: store.revision };
      const name = tokens.user(token);
      if (name === null) throw Etcd.invalidAuthToken();
      return { name, revision: store.revision };
    },
    read: (who, key, rangeEnd) => allowed(who, key, rangeEnd, "READ"),
    write: (who, key, rangeEnd) => allowed(who, key, rangeEnd, "WRITE"),
    /** etcd's IsAdminPermitted: the root role, while auth is on. */
    admin(who) {
      if (!store.enabled) return;
      if (who === null || who.name === "") throw Etcd.userEmpty();
      const user = store.user(who.name);
      if (!user) throw Etcd.userNotFound();
      if (!store.isRoot(user)) throw Etcd.permissionDenied();
    },
    isAdmin(who) {
      const user = who && store.user(who.name);
      return Boolean(user && store.isRoot(user));
    },
    /** `type` ("read", "write") on each key attached to lease `id` (a wire int64), as etcd checks them. */
    leaseKeys(who, id, type) {
      if (!store.enabled) return;
      let keys = [];
      try {
        const lease = leaseIn(id);
        if (lease !== null) keys = lessor.timeToLive(lease, { keys: true, bytes: true }).keys;
      } catch {
        // (No such lease: nothing attached.)
      }
      for (const key of keys) allowed(who, key, undefined, type === "read" ? "READ" : "WRITE");
    },

    /**
     * Applies method policy `check` (etcd/methods.mjs's `auth`) to `req`
     * from the caller with `token`. Nothing to do while auth is off and
     * no token came (every call but these few while it is off).
     */
    authorize(check, req, token) {
      if (!check || (!store.enabled && (token === undefined || token === null))) return;
      const caller = () => auth.identify(token);
      if (typeof check === "function") return check(auth, caller, req);
      try {
        const who = caller();
        if (check.startsWith("admin")) auth.admin(who);
      } catch (e) {
        throw check.endsWith("-unmapped") ? unmapped(e) : e;
      }
    },
  };
  return auth;
}

// The live tokens, kept in their own host entry (JSON [[token, user,
// deadline]]), at most 96 KiB (a KV-backed Durable Object stores 128 KiB
// in one value), about 2,000 tokens: past it the soonest to expire are
// left out (they stay valid until a restart).
const TOKENS = "auth.tokens";
const MAX_TOKENS_BYTES = 96 * 1024;
function savedTokens(lessor) {
  let saved = [];
  try {
    const raw = lessor.hostEntry(TOKENS);
    if (raw !== undefined) saved = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    // (Unreadable: no token is kept; clients authenticate again.)
  }
  const save = (list) => {
    let bytes = new TextEncoder().encode(JSON.stringify(list));
    if (bytes.length > MAX_TOKENS_BYTES) {
      list = [...list].sort((a, b) => b[2] - a[2]).slice(0, Math.floor((list.length * MAX_TOKENS_BYTES) / bytes.length / 2));
      bytes = new TextEncoder().encode(JSON.stringify(list));
    }
    lessor.setHostEntry(TOKENS, list.length ? bytes : null);
  };
  return { saved: Array.isArray(saved) ? saved : [], save };
}
