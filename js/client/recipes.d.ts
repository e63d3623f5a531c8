// edge-lease/client's recipes: sessions, mutexes and elections (etcd's
// concurrency package), as index.d.ts re-exports them.

import type { LeaseId, Listener, ListenerOptions } from "../index.js";
import type { AsyncDisposableIfKnown, Bytes, Call } from "./call.js";
import type { Compare, Entry, Key, LeaseError, Value } from "./index.js";

export interface SessionOptions extends Call {
  /** Seconds (etcd's minimum is 2); default 60. */
  ttl?: number;
  /** Keep an existing lease alive instead of granting one. */
  lease?: LeaseId | bigint;
}

export interface SessionEventMap {
  /** The lease was lost (`reason`: LeaseNotFound with `lease` and `deadline`). */
  lost: Event & { readonly reason: LeaseError };
}

/**
 * A lease kept alive every TTL/3 (etcd's concurrency.Session). `signal`
 * aborts when the session ends: at the deadline as last known once
 * keepalives stop succeeding (reason LeaseNotFound, with a `lost` event), at
 * once when a keepalive finds the lease gone, or on close() (reason Closed).
 * In-process (`connect(lessor)`) the deadline is the lessor's own, and the
 * session ends the moment the lessor expires or revokes the lease.
 *
 * Timers run late: a process frozen past the deadline (SIGSTOP, a paused
 * VM) runs its overdue timers in due order, so its own shorter sleeps end
 * before the deadline timer fires. Reading `signal` or `lost` therefore
 * reads the clock and ends the session first if the deadline has passed:
 * `session.signal.aborted` (and a lock's `signal.aborted`) is current when
 * read. A signal kept from an earlier read (a variable, a fetch it was
 * passed to) aborts only when something reads it through the session again
 * or the deadline timer runs; before acting, check `Mutex.held` (or
 * `assertHeld()`) or `Election.leading`.
 */
export interface Session extends EventTarget, AsyncDisposableIfKnown {
  readonly lease: LeaseId;
  /** The granted TTL in seconds. */
  readonly ttl: number;
  /**
   * The lease's deadline as last known, epoch ms: the last successful
   * keepalive's send time plus the TTL (in-process: the lessor's deadline,
   * as a time on this host's clock).
   */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** The lease was lost (not closed): also true once the deadline has passed by the clock now. */
  readonly lost: boolean;
  /** Go's `%x` of the lease id: what etcd's recipes append to their keys. */
  readonly keySuffix: string;
  mutex(name: Key): Mutex;
  election(name: Key): Election;
  /** Stops keepalives and revokes the lease (its keys go with it). Idempotent. */
  close(): Promise<void>;
  addEventListener<K extends keyof SessionEventMap>(type: K, listener: Listener<SessionEventMap[K]> | null, options?: boolean | ListenerOptions): void;
  addEventListener(type: string, listener: Listener<Event> | null, options?: boolean | ListenerOptions): void;
  removeEventListener<K extends keyof SessionEventMap>(type: K, listener: Listener<SessionEventMap[K]> | null, options?: boolean | ListenerOptions): void;
  removeEventListener(type: string, listener: Listener<Event> | null, options?: boolean | ListenerOptions): void;
}

/**
 * etcd's concurrency.Mutex: key `name/<lease hex>`, FIFO by create revision.
 * Interoperates with `etcdctl lock name` and Go's clients.
 */
export interface Mutex {
  /** The lock's key while held. */
  readonly key: string | undefined;
  /** The key's create revision while held: the fencing token for the protected resource. */
  readonly token: number | undefined;
  readonly session: Session;
  /** The session's signal: aborts when the lock is lost with the session (read it afresh: see Session). */
  readonly signal: AbortSignal;
  /**
   * Whether the lock is held now: locked, not unlocked, the session not
   * closed and its deadline not passed by the clock read at this call (so
   * false at once after a freeze past it, before any timer runs).
   */
  readonly held: boolean;
  /**
   * Throws unless `held`: the session's end reason (LeaseNotFound, with
   * `lease` and `deadline`, when lost; Closed), else NotHeld. Call it right
   * before each write the lock protects (and fence with `token`).
   */
  assertHeld(): void;
  /**
   * A compare that holds while this lock is held (Go's IsOwner()), for
   * `client.txn({ compare: [lock.isOwner()], ... })`; `ifHeld: lock` is the
   * shorthand. Throws NotHeld when not locked.
   */
  isOwner(): Compare;
  /** Waits for the lock; `signal` (or the session's end) gives up and removes the key. */
  lock(options?: Call): Promise<void>;
  /** Takes the lock if free: true if taken; false (no key left behind) if held by another. */
  tryLock(options?: Call): Promise<boolean>;
  unlock(options?: Call): Promise<void>;
}

/** etcd's concurrency.Election. Interoperates with `etcdctl elect`. */
export interface Election {
  /** This candidate's key while campaigning or leading. */
  readonly key: string | undefined;
  /** The key's create revision (a fencing token for the leader). */
  readonly token: number | undefined;
  readonly session: Session;
  /**
   * Whether this candidate leads now: campaign() won, no resign() or failed
   * proclaim() since, the session not closed and its deadline not passed by
   * the clock read at this call.
   */
  readonly leading: boolean;
  /** Throws unless `leading`: the session's end reason (LeaseNotFound when lost; Closed), else NotLeader. */
  assertLeading(): void;
  /** A compare that holds while this candidate leads (see Mutex.isOwner()); throws NotLeader when not leading. */
  isLeader(): Compare;
  /** Waits until elected; `signal` (or the session's end) withdraws. */
  campaign(value: Value, options?: Call): Promise<void>;
  /** A new value from the leader; NotLeader if this candidate no longer leads. */
  proclaim(value: Value, options?: Call): Promise<void>;
  resign(options?: Call): Promise<void>;
  /** The leader's entry (`value`: its proclamation), or undefined when there is none. */
  leader<B extends boolean = false>(options?: Call & Bytes<B>): Promise<Entry<B> | undefined>;
  /** The leader, then each new proclamation or leader (etcd's Observe); return() (a `break`) ends it at once. */
  observe<B extends boolean = false>(options?: Call & Bytes<B>): AsyncIterableIterator<Entry<B>> & AsyncDisposableIfKnown;
}

/** A Mutex as `withLock` hands it over: locked, so its key and token are set. */
export interface HeldMutex extends Mutex {
  readonly key: string;
  readonly token: number;
}

export interface WithLockOptions extends Call {
  /** The session's TTL in seconds; default 60. */
  ttl?: number;
}

export declare const Session: { readonly prototype: Session };
export declare const Mutex: { readonly prototype: Mutex };
export declare const Election: { readonly prototype: Election };
