// etcd's auth for the gateway backend, as etcd's Go client does it: with a
// user and password, the client authenticates before its first call,
// sends the token with every request, and when a call fails with etcd's
// "invalid auth token" (the token expired, the server restarted, the
// password changed) it authenticates once more and repeats the call once.
//
// The token goes bare in `Authorization`, as etcd's gateway clients send
// it; when the caller's own headers hold an `Authorization` already (a
// Worker's `Bearer` token, say), it goes in `Grpc-Metadata-Token`, which
// etcd's gateway reads first.

import { LeaseError, serverError, unavailable } from "./errors.mjs";

const INVALID_TOKEN = "invalid auth token";
const isInvalidToken = (e) => typeof e?.message === "string" && e.message.includes(INVALID_TOKEN);

/** One user's token: got once, again when the server refuses it. */
class Login {
  #urls; // each member's Authenticate, tried in turn while they are unavailable
  #name;
  #password;
  #headers;
  #fetch;
  #timeout;
  #token = null; // a promise of the token
  #header;

  constructor(urls, { user, password = "", headers = {}, fetch: f, timeout = 10_000 }) {
    this.#urls = urls.map((u) => new URL(String(u)).href.replace(/\/+$/, "") + "/v3/auth/authenticate");
    this.#name = String(user);
    this.#password = String(password);
    this.#headers = { ...headers };
    this.#fetch = f ?? ((...a) => globalThis.fetch(...a));
    this.#timeout = timeout;
    this.#header = Object.keys(this.#headers).some((h) => h.toLowerCase() === "authorization") ? "grpc-metadata-token" : "authorization";
  }

  /** The caller's headers with the token (authenticating first if need be). */
  async headers() {
    this.#token ??= this.#authenticate();
    const token = await this.#token.catch((e) => {
      this.#token = null; // (the next call tries again)
      throw e;
    });
    return { ...this.#headers, [this.#header]: token };
  }

  /** After the server refused the token the headers carried: a new one (once for everyone who saw it refused). */
  renew(refused) {
    this.#token = this.#token?.then((t) => (t === refused ? this.#authenticate() : t), () => this.#authenticate()) ?? null;
  }

  /** The token the headers carry (to tell which one a refusal was for). */
  tokenIn(headers) {
    return headers?.[this.#header];
  }

  // (A token is the cluster's, whichever member gave it: etcd's
  // Authenticate goes through raft.)
  async #authenticate() {
    let failure;
    for (const url of this.#urls) {
      try {
        return await this.#authenticateAt(url);
      } catch (e) {
        if (e?.code !== "Unavailable") throw e;
        failure = e;
      }
    }
    throw failure;
  }

  async #authenticateAt(url) {
    let res;
    try {
      res = await this.#fetch(url, {
        method: "POST",
        headers: this.#headers,
        body: JSON.stringify({ name: this.#name, password: this.#password }),
        signal: AbortSignal.timeout(this.#timeout),
      });
    } catch (e) {
      if (e instanceof LeaseError) throw e; // (a TLS failure, already said)
      throw unavailable(`auth/authenticate: ${e?.message ?? e}`, e);
    }
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: `auth/authenticate: HTTP ${res.status} ${text.trim().slice(0, 200)}` };
    }
    if (!res.ok) throw serverError(body, res.status);
    if (typeof body.token !== "string") throw unavailable("auth/authenticate: no token in the answer");
    return body.token;
  }
}

/**
 * `options` for GatewayBackend with `user` and `password` turned into a
 * token in its headers (`headers` a function it calls per request), and
 * the wrapper that repeats a call once with a new token: `{ options,
 * wrap(backend) }`. Without a user, the options as they are.
 */
export function gatewayAuth(urls, options) {
  if (options.user === undefined || options.user === null) return { options, wrap: (b) => b };
  const { user, password, ...rest } = options;
  const login = new Login(urls, { user, password, headers: rest.headers, fetch: rest.fetch, timeout: rest.timeout });
  let last = null;
  const headers = async () => (last = await login.headers());
  return { options: { ...rest, headers }, wrap: (backend) => retrying(backend, login, () => last) };
}

// The backend's calls, each repeated once with a new token when refused.
function retrying(backend, login, lastHeaders) {
  const once = (method) => async (...args) => {
    try {
      return await backend[method](...args);
    } catch (e) {
      if (!isInvalidToken(e)) throw e;
      login.renew(login.tokenIn(lastHeaders()));
      return backend[method](...args);
    }
  };
  const wrapped = {
    get url() {
      return backend.url;
    },
    get timeout() {
      return backend.timeout;
    },
    get endpoints() {
      return backend.endpoints;
    },
  };
  for (const m of ["range", "put", "deleteRange", "txn", "compact", "grant", "keepAlive", "revoke", "timeToLive", "leases"]) wrapped[m] = once(m);
  // A watch whose create was refused for its token (etcd cancels it with
  // that reason) starts once more with a new one.
  wrapped.watch = async function* (req, opts) {
    for (let attempt = 0; ; attempt++) {
      let refused = false;
      for await (const m of backend.watch(req, opts)) {
        if (attempt === 0 && m.canceled && m.cancelReason.includes(INVALID_TOKEN)) {
          refused = true;
          break;
        }
        yield m;
      }
      if (!refused) return;
      login.renew(login.tokenIn(lastHeaders()));
    }
  };
  wrapped.close = () => backend.close();
  return wrapped;
}
