//! The revoke-rate limiter: at most `rate` expiries in any 1 s of host time.

use std::collections::VecDeque;

/// At most `rate` revocations in any window of 1000 ms of host time.
///
/// A sliding window rather than a token bucket: a bucket of size `rate` lets
/// `2 * rate` through in one second (a full bucket plus a second's refill),
/// which breaks the promise; the window cannot, and unused allowance never
/// carries over beyond one second.
pub struct RateLimiter {
    rate: u32,
    used: u32,
    /// (time, count) of recent revocations, oldest first; at most one entry
    /// per millisecond, so at most 1000 entries.
    recent: VecDeque<(i64, u32)>,
}

pub const WINDOW_MS: i64 = 1000;

impl RateLimiter {
    pub fn new(rate: u32) -> Self {
        RateLimiter {
            rate,
            used: 0,
            recent: VecDeque::new(),
        }
    }

    fn forget_before(&mut self, now: i64) {
        while let Some(&(t, n)) = self.recent.front() {
            if now.saturating_sub(t) < WINDOW_MS {
                break;
            }
            self.used -= n;
            self.recent.pop_front();
        }
    }

    /// How many more revocations may happen at `now`.
    pub fn allowance(&mut self, now: i64) -> u32 {
        self.forget_before(now);
        self.rate - self.used
    }

    pub fn record(&mut self, now: i64) {
        match self.recent.back_mut() {
            Some((t, n)) if *t == now => *n += 1,
            _ => self.recent.push_back((now, 1)),
        }
        self.used += 1;
    }

    /// The earliest time at or after `now` when one more revocation is allowed.
    pub fn next_allowed(&mut self, now: i64) -> i64 {
        self.forget_before(now);
        if self.used < self.rate {
            return now;
        }
        // Drop oldest entries until one slot frees up.
        let mut freed = 0;
        for &(t, n) in &self.recent {
            freed += n;
            if self.used - freed < self.rate {
                return t.saturating_add(WINDOW_MS);
            }
        }
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_never_exceeds_rate_in_any_window() {
        let mut l = RateLimiter::new(3);
        assert_eq!(l.allowance(0), 3);
        l.record(0);
        l.record(0);
        assert_eq!(l.allowance(500), 1);
        l.record(500);
        assert_eq!(l.allowance(999), 0);
        assert_eq!(l.next_allowed(999), 1000);
        // At 1000 the two at t=0 leave the window, the one at 500 stays.
        assert_eq!(l.allowance(1000), 2);
        assert_eq!(l.allowance(1499), 2);
        assert_eq!(l.allowance(1500), 3);
    }

    #[test]
    fn unused_allowance_does_not_build_up() {
        let mut l = RateLimiter::new(2);
        assert_eq!(l.allowance(0), 2);
        assert_eq!(l.allowance(10_000), 2);
    }
}
