// Lessor events: the event class, and dispatch only of the types someone
// listens to (building an event costs more than the operation itself).

/** The event every lessor dispatches: grant, renew, revoke, expire, put, delete. */
export class LeaseEvent extends Event {
  constructor(type, init = {}) {
    super(type);
    this.lease = init.lease ?? null;
    this.key = init.key ?? null;
    this.keys = init.keys ?? [];
    this.revision = init.revision ?? 0;
    this.ttl = init.ttl ?? 0;
  }
}

export class Events {
  #target;
  #wants = Object.create(null);

  constructor(target) {
    this.#target = target;
  }

  /** Records that `type` has a listener (called by addEventListener). */
  listen(type) {
    this.#wants[type] = true;
  }

  /** Whether an event of `type` would reach anyone: check before building a costly init. */
  wants(type) {
    return this.#wants[type] === true;
  }

  emit(type, init) {
    if (this.#wants[type] === true) this.#target.dispatchEvent(new LeaseEvent(type, init));
  }

  /** An event with fields of its own (`fields`), for types seldom listened to. */
  emitPlain(type, fields) {
    if (this.#wants[type] === true) this.#target.dispatchEvent(Object.assign(new Event(type), fields));
  }

  /** An error nobody's call could catch (the expiry timer's), as an `error` event. */
  error(e) {
    this.#target.dispatchEvent(Object.assign(new Event("error"), { error: e }));
  }
}
