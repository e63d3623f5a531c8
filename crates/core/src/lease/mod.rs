//! Leases: the table of leases with their deadlines, the order in which they
//! fall due, the ids they get, and the rate at which they may expire. Knows
//! nothing of keys beyond the names a lease holds.

mod expiry;
mod ids;
mod keys;
mod limiter;
mod promotion;
mod queue;
mod table;

pub use expiry::Expiry;
pub use ids::random_u64;
pub use keys::LeaseKeys;
pub use limiter::{RateLimiter, WINDOW_MS};
pub use promotion::{per_window, spread};
pub use table::LeaseTable;

use crate::storage::StoredLease;

/// Deadline of a lease on a standby lessor: it does not expire.
pub const FOREVER: i64 = i64::MAX;
/// `Lease::queued` when the lease has no entry in the deadline queue.
pub const NOT_QUEUED: i64 = i64::MIN;
/// `Lease::stored` when the stored record has no deadline (or there is none).
pub const NOT_STORED: i64 = i64::MIN;

pub struct Lease {
    /// Granted TTL in seconds.
    pub ttl: i64,
    /// Epoch ms after which the lease is gone; FOREVER on a standby.
    pub deadline: i64,
    /// The deadline its queue entry carries (never later than `deadline`).
    pub queued: i64,
    /// The deadline a store would hold for it: moved only when a renewal
    /// takes the deadline more than the slack past it (see `needs_persist`),
    /// whether or not a store is attached, so a snapshot is always as
    /// recoverable as the store.
    pub stored: i64,
    /// Checkpointed remaining ms for the next promotion; 0 if none.
    pub remaining: i64,
    /// Attached keys, sorted.
    pub keys: LeaseKeys,
}

impl Lease {
    /// A new lease of `ttl` seconds whose deadline is `deadline`, stored as
    /// `stored`, holding no keys and not yet queued.
    pub fn new(ttl: i64, deadline: i64, stored: i64) -> Lease {
        Lease {
            ttl,
            deadline,
            queued: NOT_QUEUED,
            stored,
            remaining: 0,
            keys: LeaseKeys::default(),
        }
    }

    /// Whether the lease still exists at host time `now`. The one rule:
    /// a lease is gone the moment its deadline passes, tick or no tick.
    pub fn live(&self, now: i64) -> bool {
        self.deadline > now
    }

    /// Live at `now`, or, while expiry is held since `held`, live then (one
    /// that had passed its deadline by then stays gone: reads said so).
    pub fn alive(&self, now: i64, held: Option<i64>) -> bool {
        self.live(now) || held.is_some_and(|since| self.live(since))
    }

    /// What a promotion starts this lease from: its checkpoint, else its TTL.
    pub fn remaining_or_ttl(&self) -> i64 {
        if self.remaining > 0 {
            self.remaining
        } else {
            self.ttl.saturating_mul(1000)
        }
    }

    /// The record as storage holds it: the deadline last written (restore
    /// adds the slack to it), not the live one, also while on a standby.
    pub fn stored_record(&self) -> StoredLease {
        StoredLease {
            ttl: self.ttl,
            deadline: (self.stored != NOT_STORED).then_some(self.stored),
            remaining: self.remaining,
        }
    }

    /// Whether moving this lease's deadline to `deadline` leaves the stored
    /// one too early to recover from (see `restore`), so it must be written.
    pub fn needs_persist(&self, deadline: i64) -> bool {
        deadline > self.stored.saturating_add(slack_ms(self.ttl))
    }
}

/// How far a stored deadline may trail the real one. Restore adds it back, so
/// a lease is never early after a restart and at most this late.
pub fn slack_ms(ttl: i64) -> i64 {
    ttl.saturating_mul(500)
}
