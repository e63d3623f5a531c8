//! The deadline queue: a min-heap of (deadline, id), soonest first.
//!
//! Entries are not updated in place. A renewal only moves a lease's deadline
//! later and leaves its entry where it is; when that entry reaches the top,
//! the table re-queues it at the real deadline (`LeaseTable::next_due`). So a
//! renewal costs no heap work, except when it makes the deadline earlier
//! than the queued one (after a promotion's extension) and pushes a second
//! entry. Revoked leases leave their entries behind, skipped when popped; the
//! table rebuilds the heap when such leftovers outnumber live leases.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::types::LeaseId;

#[derive(Default)]
pub struct DeadlineQueue {
    heap: BinaryHeap<Reverse<(i64, LeaseId)>>,
}

impl DeadlineQueue {
    pub fn push(&mut self, deadline: i64, id: LeaseId) {
        self.heap.push(Reverse((deadline, id)));
    }

    pub fn peek(&self) -> Option<(i64, LeaseId)> {
        self.heap.peek().map(|r| r.0)
    }

    pub fn pop(&mut self) -> Option<(i64, LeaseId)> {
        self.heap.pop().map(|r| r.0)
    }

    pub fn clear(&mut self) {
        self.heap.clear();
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn shrink_to_fit(&mut self) {
        self.heap.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_pops_soonest_then_lowest_id() {
        let mut q = DeadlineQueue::default();
        q.push(20, 1);
        q.push(10, 7);
        q.push(10, 3);
        assert_eq!(q.pop(), Some((10, 3)));
        assert_eq!(q.pop(), Some((10, 7)));
        assert_eq!(q.pop(), Some((20, 1)));
        assert_eq!(q.pop(), None);
    }
}
