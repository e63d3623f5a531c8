//! The lease table: every lease by id, the queue of their deadlines, and the
//! keys each holds (as etcd's lessor keeps item sets: it never reads values).

use std::collections::HashMap;

use super::ids::{random_u64, IdGen};
use super::queue::DeadlineQueue;
use super::{Lease, FOREVER, NOT_QUEUED};
use crate::error::Result;
use crate::types::{Key, LeaseId};

/// Seeded per table from the OS, so ids chosen by clients cannot be crafted
/// to collide.
type LeaseMap = HashMap<LeaseId, Lease, foldhash::fast::FixedState>;

pub struct LeaseTable {
    map: LeaseMap,
    queue: DeadlineQueue,
    ids: IdGen,
    /// Expiry is held since this time (`Lessor::hold_expiry`): a lease
    /// alive then lives on past its deadline, with its keys, until it is
    /// released.
    pub held: Option<i64>,
}

impl LeaseTable {
    pub fn new() -> Result<LeaseTable> {
        let seed = random_u64()?;
        Ok(LeaseTable {
            map: LeaseMap::with_hasher(foldhash::fast::FixedState::with_seed(seed)),
            queue: DeadlineQueue::default(),
            ids: IdGen::new()?,
            held: None,
        })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn get(&self, id: LeaseId) -> Option<&Lease> {
        self.map.get(&id)
    }

    /// The lease if it is live at `now` (or was when expiry was held).
    pub fn live(&self, id: LeaseId, now: i64) -> Option<&Lease> {
        self.map.get(&id).filter(|l| self.alive(l, now))
    }

    /// Whether `l` is alive at `now` under this table's hold (`Lease::alive`).
    pub fn alive(&self, l: &Lease, now: i64) -> bool {
        l.alive(now, self.held)
    }

    /// The visibility rule for keys: a key is there while the lease it
    /// belongs to lives (or it belongs to none). Every key's lease is in the
    /// table, so while no lease is due the answer needs no lookup (at 100k
    /// keys that lookup was a fifth of a get).
    pub fn keeps(&self, lease: LeaseId, now: i64) -> bool {
        lease == 0 || self.none_due(now) || self.live(lease, now).is_some()
    }

    /// Whether every lease in the table is before its deadline at `now`.
    /// Each lease with a deadline has a queue entry no later than it (a
    /// renewal that makes it earlier queues it again, `renewed`; `take_due`
    /// takes entries only for the tick that ends or requeues them), and the
    /// others, a standby's, have none: so a soonest entry after `now`, or
    /// none, says it. Stale entries only make it say no more often.
    fn none_due(&self, now: i64) -> bool {
        self.queue.peek().is_none_or(|(d, _)| d > now)
    }

    pub fn iter(&self) -> impl Iterator<Item = (LeaseId, &Lease)> {
        self.map.iter().map(|(&id, l)| (id, l))
    }

    /// A random positive 63-bit id no lease in the table has.
    pub fn fresh_id(&mut self) -> Result<LeaseId> {
        loop {
            let id = self.ids.next()?;
            if id != 0 && !self.map.contains_key(&id) {
                return Ok(id);
            }
        }
    }

    /// Adds a lease; on a primary it is queued at its deadline. Returns false
    /// (and changes nothing) if the id is taken.
    pub fn insert(&mut self, id: LeaseId, mut lease: Lease, primary: bool) -> bool {
        let std::collections::hash_map::Entry::Vacant(slot) = self.map.entry(id) else {
            return false;
        };
        if primary {
            lease.queued = lease.deadline;
            self.queue.push(lease.deadline, id);
        }
        slot.insert(lease);
        true
    }

    /// Room for `n` more leases (a restore knows how many come).
    pub fn reserve(&mut self, n: usize) {
        self.map.reserve(n);
    }

    pub fn remove(&mut self, id: LeaseId) -> Option<Lease> {
        let l = self.map.remove(&id)?;
        // Removed leases leave their queue entries behind (skipped when
        // popped); rebuild when they outnumber the live ones.
        if self.queue.len() > 2 * self.map.len() + 64 {
            self.rebuild_queue();
        }
        Some(l)
    }

    /// Renews: the deadline moves to `deadline`, the checkpoint is used up,
    /// and `stored` follows when `persisted`.
    pub fn renewed(&mut self, id: LeaseId, deadline: i64, persisted: bool) {
        let Some(l) = self.map.get_mut(&id) else {
            return;
        };
        l.deadline = deadline;
        l.remaining = 0;
        if persisted {
            l.stored = deadline;
        }
        if deadline < l.queued {
            // A promotion's extension made the queued deadline later than
            // this renewal's: queue again (the old entry is skipped).
            l.queued = deadline;
            self.queue.push(deadline, id);
        }
    }

    pub fn set_remaining(&mut self, id: LeaseId, remaining: i64) {
        if let Some(l) = self.map.get_mut(&id) {
            l.remaining = remaining;
        }
    }

    /// The soonest (deadline, id) in the queue that is a lease's real
    /// deadline: leftovers of removed leases are dropped, and leases renewed
    /// since they were queued are re-queued at their deadline, on the way.
    pub fn next_due(&mut self) -> Option<(i64, LeaseId)> {
        while let Some((d, id)) = self.queue.peek() {
            match self.map.get_mut(&id).filter(|l| l.queued == d) {
                None => {
                    self.queue.pop(); // removed, or an old incarnation of the id
                }
                Some(l) if l.deadline > d => {
                    l.queued = l.deadline;
                    let nd = l.deadline;
                    self.queue.pop();
                    self.queue.push(nd, id);
                }
                Some(_) => return Some((d, id)),
            }
        }
        None
    }

    /// Takes out of the queue up to `max` leases due at `now`, soonest
    /// first. The caller ends them, or gives them back with `requeue`.
    pub fn take_due(&mut self, now: i64, max: usize) -> Vec<(i64, LeaseId)> {
        let mut due = Vec::new();
        while due.len() < max {
            match self.next_due() {
                Some((d, id)) if d <= now => {
                    self.queue.pop();
                    // Taken: another entry of the id at the same deadline
                    // (left by an incarnation revoked and granted again in
                    // the same millisecond) is stale from now on.
                    if let Some(l) = self.map.get_mut(&id) {
                        l.queued = NOT_QUEUED;
                    }
                    due.push((d, id));
                }
                _ => break,
            }
        }
        due
    }

    /// Puts back leases `take_due` took and that did not end.
    pub fn requeue(&mut self, due: &[(i64, LeaseId)]) {
        for &(d, id) in due {
            if let Some(l) = self.map.get_mut(&id) {
                l.queued = d;
            }
            self.queue.push(d, id);
        }
    }

    /// Attaches `key` to the lease; false if there is no such lease.
    pub fn attach(&mut self, id: LeaseId, key: &Key) -> bool {
        let Some(l) = self.map.get_mut(&id) else {
            return false;
        };
        l.keys.insert(key);
        true
    }

    /// Takes `keys` out of lease `id`'s key list. Each run of them in key
    /// order (a DeleteRange's; a transaction has one per op at most) goes
    /// in one pass over the list when it is long, else a key at a time: a
    /// DeleteRange of a lease's 100k keys took them out one by one from
    /// the sorted list, quadratic, ~1 s.
    pub fn detach(&mut self, id: LeaseId, mut keys: &[Key]) {
        let Some(l) = self.map.get_mut(&id) else {
            return;
        };
        while !keys.is_empty() {
            let n = 1 + keys.windows(2).take_while(|w| w[0] < w[1]).count();
            let (run, rest) = keys.split_at(n);
            if run.len() > 8 {
                l.keys.retain(|k| run.binary_search(k).is_err());
            } else {
                for key in run {
                    l.keys.remove(key);
                }
            }
            keys = rest;
        }
    }

    /// Sets the deadlines a promotion planned (and `stored` where the
    /// promotion wrote them), then queues every lease afresh.
    pub fn promoted(&mut self, plan: &[(i64, LeaseId)]) {
        for &(d, id) in plan {
            if let Some(l) = self.map.get_mut(&id) {
                if l.needs_persist(d) {
                    l.stored = d;
                }
                l.deadline = d;
            }
        }
        self.rebuild_queue();
    }

    /// Stops expiry: each live lease keeps its remaining time as a
    /// checkpoint and gets no deadline. Leases already past theirs stay
    /// queued (nothing takes them on a standby): `none_due` reads the queue.
    pub fn demote(&mut self, now: i64) {
        for l in self.map.values_mut() {
            if l.live(now) {
                l.remaining = l.deadline.saturating_sub(now);
                l.deadline = FOREVER;
            }
        }
        self.rebuild_queue();
    }

    fn rebuild_queue(&mut self) {
        self.queue.clear();
        for (&id, l) in self.map.iter_mut() {
            if l.deadline == FOREVER {
                l.queued = NOT_QUEUED;
                continue;
            }
            l.queued = l.deadline;
            self.queue.push(l.deadline, id);
        }
        self.queue.shrink_to_fit();
    }
}
