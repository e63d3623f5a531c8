//! Spreading a promotion's deadlines so that they do not all fall due at once.

use std::collections::VecDeque;

use super::WINDOW_MS;
use crate::types::LeaseId;

/// Delays deadlines (sorted here) so that no `per_window + 1` of them fall in
/// one window of 1000 ms: each is moved to the earliest time that keeps the
/// window before it under the limit, and never earlier than it was.
pub fn spread(plan: &mut [(i64, LeaseId)], per_window: usize) {
    crate::order::sort_by(plan, Ord::cmp);
    let mut recent: VecDeque<i64> = VecDeque::with_capacity(per_window + 1);
    for slot in plan.iter_mut() {
        let mut d = slot.0;
        if recent.len() == per_window {
            if let Some(&oldest) = recent.front() {
                d = d.max(oldest.saturating_add(WINDOW_MS));
            }
            recent.pop_front();
        }
        recent.push_back(d);
        slot.0 = d;
    }
}

/// The most leases a promotion lets fall due in one window: 3/4 of the
/// revoke rate (rounded down, at least 1), leaving room for new expiries.
pub fn per_window(revoke_rate: u32) -> usize {
    let rate = revoke_rate as usize;
    (rate / 4 * 3 + rate % 4 * 3 / 4).max(1)
}
