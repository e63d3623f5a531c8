// etcd's simple tokens (auth/simple_token.go): 16 random letters, a dot and
// an index, each naming a user until it is unused for its TTL (every use
// gives it the whole TTL again), the user's password changes or the user
// goes, or auth is turned off.
//
// etcd's tokens outlive a restart: it applies its log's Authenticate entries
// again, each giving its token back with a whole TTL from then. Here the
// tokens are saved (`save`) whenever one is given out or taken back, each
// with its deadline as it is then, and a restart takes back those still
// alive by it, each with a whole TTL from the restart (as etcd's replay
// gives them; etcd's gives back expired ones too, these do not). A token
// kept alive by use but not saved since its first TTL passed is lost, and
// its client authenticates again on "invalid auth token", as etcd's
// clients do.
//
// etcd drops an unused token on a 1 s tick; here a token is refused from
// the moment its TTL has passed, and dropped then or when tokens are next
// given out. A token whose index is past what etcd has applied makes etcd
// wait for that index before it refuses it; here it is refused at once.

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const PREFIX_LENGTH = 16;
// etcd's default, also for a TTL of 0.
export const DEFAULT_TOKEN_TTL_MS = 300_000;

/** etcd's token prefix: 16 letters, each uniformly random (crypto). */
export function tokenPrefix() {
  const out = [];
  const byte = new Uint8Array(1);
  while (out.length < PREFIX_LENGTH) {
    crypto.getRandomValues(byte);
    // 52 letters: take bytes below 208 (4 x 52) so each is equally likely.
    if (byte[0] < 208) out.push(LETTERS[byte[0] % 52]);
  }
  return out.join("");
}

// etcd's isValidSimpleToken shape: two parts, the second an integer (Go's
// strconv.Atoi: an optional sign, decimal digits, within 64 bits).
const SHAPE = /^[^.]*\.[+-]?\d+$/;
const wellFormed = (token) => SHAPE.test(token) && Math.abs(Number(token.slice(token.indexOf(".") + 1))) < 2 ** 63;

export class SimpleTokens {
  #ttlMs;
  #now;
  #enabled = false;
  // token -> { user, expires (ms) }
  #tokens = new Map();

  #save;

  /**
   * `ttlMs`: --auth-token-ttl (0: etcd's default); `now()`: the clock,
   * epoch ms; `saved`: what `save(list)` was last given, [[token, user,
   * deadline]], to take back those alive.
   */
  constructor({ ttlMs = DEFAULT_TOKEN_TTL_MS, now = Date.now, saved = [], save = () => {} } = {}) {
    this.#ttlMs = ttlMs > 0 ? ttlMs : DEFAULT_TOKEN_TTL_MS;
    this.#now = now;
    this.#save = save;
    const t = now();
    for (const [token, user, deadline] of saved) if (deadline >= t) this.#tokens.set(token, { user, expires: t + this.#ttlMs });
  }

  enable() {
    this.#enabled = true;
  }

  /** Every token goes. */
  disable() {
    this.#enabled = false;
    this.#tokens.clear();
    this.#persist();
  }

  /** A new token for `user` at `index` (kept only while enabled, as etcd's). */
  assign(user, index) {
    this.#sweep();
    let token;
    do token = `${tokenPrefix()}.${index}`;
    while (this.#tokens.has(token));
    if (this.#enabled) {
      this.#tokens.set(token, { user, expires: this.#now() + this.#ttlMs });
      this.#persist();
    }
    return token;
  }

  /** The user `token` names (its TTL starts again), or null (always while auth is off). */
  user(token) {
    if (!this.#enabled || typeof token !== "string" || !wellFormed(token)) return null;
    // (A lookup by the whole string: no comparison of it that stops early.)
    const t = this.#tokens.get(token);
    if (t === undefined) return null;
    const now = this.#now();
    if (now > t.expires) {
      this.#tokens.delete(token);
      return null;
    }
    t.expires = now + this.#ttlMs;
    return t.user;
  }

  /** Every token of `user` goes (its password changed, or it was deleted). */
  invalidateUser(user) {
    let gone = false;
    for (const [token, t] of this.#tokens) if (t.user === user) gone = this.#tokens.delete(token);
    if (gone) this.#persist();
  }

  get size() {
    return this.#tokens.size;
  }

  #persist() {
    this.#save([...this.#tokens].map(([token, t]) => [token, t.user, t.expires]));
  }

  #sweep() {
    const now = this.#now();
    for (const [token, t] of this.#tokens) if (now > t.expires) this.#tokens.delete(token);
  }
}
