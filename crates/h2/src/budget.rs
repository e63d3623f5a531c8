//! The CPU one connection's input may take: what its bytes cost h2 and the
//! calls to read (header blocks decoded, frames parsed, messages split off),
//! measured, against an allowance that refills with time. Decoding is paid
//! by the server and chosen by the client: a connection sending header
//! blocks that are cheap to send and dear to decode (the HPACK bomb of
//! issue 31, once at 0.8 ms a block) gets GOAWAY ENHANCE_YOUR_CALM past its
//! allowance instead of the others' share of the event loop.
//!
//! A legitimate client's input costs the module a few microseconds a call,
//! and the host's handling of that call several times as much, so it
//! reaches its own share of the CPU long before this share of it.

use std::time::{Duration, Instant};

/// The share of the time a connection's input may take, on average.
const SHARE: f64 = 0.25;
/// What it may take at once (a burst of calls, one large read).
const BURST: Duration = Duration::from_millis(250);

pub struct Budget {
    /// Time it may still take.
    left: Duration,
    /// When `left` was last refilled.
    at: Instant,
}

impl Budget {
    pub fn new(now: Instant) -> Budget {
        Budget {
            left: BURST,
            at: now,
        }
    }

    /// Counts work from `start` to `end`; false once more was taken than
    /// allowed. (The allowance accrues over all the time, the work's too.)
    pub fn spend(&mut self, start: Instant, end: Instant) -> bool {
        let took = end.saturating_duration_since(start);
        let refill = end.saturating_duration_since(self.at).mul_f64(SHARE);
        self.at = end.max(self.at);
        match (self.left + refill).min(BURST).checked_sub(took) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.left = Duration::ZERO;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_a_share_of_the_time() {
        let t0 = Instant::now();
        let ms = |n: u64| Duration::from_millis(n);
        // Work without a pause: the burst and the quarter that accrues
        // meanwhile, 250 / (1 - 0.25) = 333 ms, then no more.
        let mut b = Budget::new(t0);
        let fails = (0..100u64)
            .find(|&k| !b.spend(t0 + ms(10 * k), t0 + ms(10 * k + 10)))
            .unwrap();
        assert_eq!(fails, 33);
        // Idle a second: the whole burst again, not more.
        let t1 = t0 + ms(1340);
        assert!(b.spend(t1, t1 + ms(250)));
        assert!(!b.spend(t1 + ms(250), t1 + ms(251)));
        // A quarter of the time, for as long as it goes on.
        let mut b = Budget::new(t0);
        assert!((0..1000u64).all(|k| b.spend(t0 + ms(100 * k), t0 + ms(100 * k + 25))));
    }
}
