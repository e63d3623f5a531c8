//! Expiry: which leases a tick ends. Those past their deadline, soonest
//! first, at most `revoke_rate` in any 1 s of host time (the rest stay
//! queued); none on a standby or while expiry is held; and first the ones
//! that ended outside a tick, which only a tick reports.

use super::{LeaseTable, RateLimiter};
use crate::ops::{Revoked, Tick};
use crate::types::LeaseId;

pub struct Expiry {
    limiter: RateLimiter,
    /// Leases expired outside `tick` (a grant reusing an expired id), for the
    /// next `tick` to report.
    outbox: Vec<Revoked>,
}

impl Expiry {
    pub fn new(revoke_rate: u32) -> Expiry {
        Expiry {
            limiter: RateLimiter::new(revoke_rate),
            outbox: Vec::new(),
        }
    }

    /// Keeps a lease that expired outside a tick for the next one to report.
    pub fn report(&mut self, expired: Revoked) {
        self.outbox.push(expired);
    }

    /// Starts a tick at `now`: what earlier expiries left to report, and
    /// the leases due now that the rate allows, taken from the queue (put
    /// them back with `LeaseTable::requeue` if their end is refused).
    pub fn start(
        &mut self,
        leases: &mut LeaseTable,
        now: i64,
        primary: bool,
    ) -> (Tick, Vec<(i64, LeaseId)>) {
        let tick = Tick {
            expired: std::mem::take(&mut self.outbox),
            error: None,
        };
        if !primary || leases.held.is_some() {
            return (tick, Vec::new());
        }
        let allowance = self.limiter.allowance(now) as usize;
        (tick, leases.take_due(now, allowance))
    }

    /// Counts one expiry at `now` against the rate.
    pub fn record(&mut self, now: i64) {
        self.limiter.record(now);
    }

    /// The earliest host time at which a tick has work, or None.
    pub fn next_deadline(
        &mut self,
        leases: &mut LeaseTable,
        now: i64,
        primary: bool,
    ) -> Option<i64> {
        if !self.outbox.is_empty() {
            return Some(now);
        }
        if !primary || leases.held.is_some() {
            return None;
        }
        let (d, _) = leases.next_due()?;
        Some(d.max(self.limiter.next_allowed(now)))
    }
}
