//! The lessor: the front that composes the lease table, the keyspace and the
//! store. Each operation checks its input, stages its changes in one
//! [`Write`] and commits it; reads go through one visibility rule.
//!
//! Semantics follow etcd's lessor (server/lease/lessor.go) with these
//! changes, each for a reported problem:
//! - A lease is gone for every read and write the moment its deadline passes,
//!   whether or not `tick` has cleaned it up yet.
//! - `renew` is O(1): it only moves the deadline; the queue catches up lazily.
//! - Time comes from the host, and never goes back: the lessor keeps the
//!   highest time it has seen, so nothing un-expires and nothing expires early.
//! - `demote` checkpoints each lease's remaining time, so a demote/promote
//!   cycle does not reset TTLs.
//! - Promotion pile-ups are spread by a sliding window: at most 3/4 of the
//!   revoke rate fall in any 1 s window, and no lease is ever moved earlier.
//! - Deadlines are persisted (coalesced), so a restart neither resets TTLs nor
//!   keeps an abandoned lease alive: see [`Lessor::restore`].

use crate::config::Config;
use crate::counts::{Counts, Tally};
use crate::error::{Error, Result};
use crate::kv::Keyspace;
use crate::lease::{
    per_window, random_u64, spread, Lease, LeaseId, LeaseTable, RateLimiter, FOREVER, MAX_LEASE_TTL,
};
use crate::ops::{Granted, Revoked, Tick, TimeToLive};
use crate::storage::{Storage, Store, StoredLease};
use crate::watch::Watchers;
use crate::write::Write;

/// How many versions compactions left unreadable each write that changes
/// keys sweeps at least (`Lessor::commit`), and per key change it makes:
/// more than the write adds, so that the history `Config::history` bounds
/// stays bounded with no host steps.
const SWEEP_PER_WRITE: usize = 16;
const SWEEP_PER_CHANGE: usize = 2;

pub struct Lessor {
    pub(crate) config: Config,
    pub(crate) leases: LeaseTable,
    pub(crate) kv: Keyspace,
    limiter: RateLimiter,
    primary: bool,
    /// The highest host time seen.
    pub(crate) now: i64,
    pub(crate) store: Store,
    /// Leases expired outside `tick` (a grant reusing an expired id), for the
    /// next `tick` to report.
    outbox: Vec<Revoked>,
    pub(crate) watchers: Watchers,
    /// Whether the store has recorded the compaction point (a store written
    /// before history was kept has not, and restores without history).
    pub(crate) history_stored: bool,
    /// The host's entries, kept in the store beside the state (src/host.rs).
    pub(crate) host: Vec<(String, Vec<u8>)>,
    /// What it has done, as etcd's metrics count it.
    pub(crate) counts: Counts,
}

impl Lessor {
    pub fn new(config: Config) -> Result<Lessor> {
        config.validate()?;
        Ok(Lessor {
            limiter: RateLimiter::new(config.revoke_rate),
            config,
            leases: LeaseTable::new()?,
            kv: Keyspace::new(random_u64()?),
            primary: true,
            now: i64::MIN,
            store: Store::default(),
            outbox: Vec::new(),
            watchers: Watchers::default(),
            history_stored: false,
            counts: Counts::default(),
            host: Vec::new(),
        })
    }

    /// A lessor whose every change is first written to `storage`.
    pub fn with_storage(config: Config, storage: Box<dyn Storage>) -> Result<Lessor> {
        let mut l = Lessor::new(config)?;
        l.store = Store::new(Some(storage));
        Ok(l)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// The revision of the last change to the keyspace.
    pub fn revision(&self) -> i64 {
        self.kv.revision()
    }

    /// Number of leases held, including expired ones not yet cleaned up.
    pub fn lease_count(&self) -> usize {
        self.leases.len()
    }

    /// Number of keys held, including those of expired leases not yet cleaned up.
    pub fn key_count(&self) -> usize {
        self.kv.len()
    }

    /// What it has done since it was made, as etcd's metrics count it.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Records the host's time; returns the lessor's time, which never goes back.
    pub(crate) fn observe(&mut self, now: i64) -> i64 {
        if now > self.now {
            self.now = now;
        }
        self.now
    }

    /// Whether compacting at `to` would move the point: past it, and past
    /// revision 0, which holds nothing (the point stays at -1, where etcd
    /// starts it).
    pub(crate) fn compaction_moves_to(&self, to: i64) -> bool {
        to > self.kv.compacted().max(0)
    }

    /// Commits a write. It also moves the compaction point past history
    /// beyond what `Config::history` keeps, a quarter of it at a time, never
    /// past a change a watcher has not been given; a write that changes keys
    /// also sweeps a few versions compactions left unreadable (so they go
    /// with writes even when the host runs no steps, `compact_step`); and a
    /// store's first key change records the compaction point, which marks
    /// the store as one that keeps history.
    pub(crate) fn commit(&mut self, mut w: Write) -> Result<i64> {
        if w.changes_keys() {
            let keep = self.config.history;
            let floor = self.kv.revision().saturating_sub(keep);
            if floor.saturating_sub(self.kv.compacted()) > (keep / 4).max(1) {
                let wanted = self.watchers.oldest_wanted().unwrap_or(floor);
                let to = floor.min(wanted);
                if self.compaction_moves_to(to) {
                    w.compact(to);
                }
            }
            let budget = SWEEP_PER_WRITE.max(SWEEP_PER_CHANGE * w.key_changes());
            w.sweep(&self.kv, budget);
            if !self.history_stored {
                w.mark_compacted();
            }
        }
        let marks = w.changes_keys();
        let swept = w.swept() as u64;
        let rev = w.commit(&mut self.kv, &mut self.leases, &mut self.store)?;
        self.history_stored |= marks;
        self.counts.compacted += swept;
        Ok(rev)
    }

    /// Grants a lease. `id` 0 picks a random positive id. TTLs below the
    /// minimum (0 and negative included) are raised to it.
    pub fn grant(&mut self, now: i64, ttl: i64, id: LeaseId) -> Result<Granted> {
        let now = self.observe(now);
        if ttl > MAX_LEASE_TTL {
            return Err(Error::LeaseTtlTooLarge(ttl));
        }
        let ttl = ttl.max(self.config.min_ttl);
        let id = if id == 0 {
            self.leases.fresh_id()?
        } else {
            if let Some(old) = self.leases.get(id) {
                if self.leases.alive(old, now) {
                    return Err(Error::LeaseExists(id));
                }
                // Expired but not cleaned up yet: finish its expiry first, as
                // its own change, so the new lease starts with no keys.
                let expired = self.remove_lease(id)?;
                self.counts.expired += 1;
                self.outbox.push(expired);
            }
            id
        };
        let end = now.saturating_add(ttl * 1000);
        let deadline = if self.primary { end } else { FOREVER };
        // Stored with a deadline even on a standby: restore always makes a
        // primary, and a record without one would get a fresh TTL on every
        // restart (an abandoned lease kept alive forever).
        let lease = Lease::new(ttl, deadline, end);
        let mut w = Write::new(&self.kv);
        w.lease(id, lease.stored_record());
        self.commit(w)?;
        self.leases.insert(id, lease, self.primary);
        self.counts.granted += 1;
        Ok(Granted { id, ttl })
    }

    /// Renews a lease: its deadline becomes now + its TTL. Returns the TTL.
    pub fn renew(&mut self, now: i64, id: LeaseId) -> Result<i64> {
        let now = self.observe(now);
        if !self.primary {
            return Err(Error::NotPrimary);
        }
        let Some(l) = self.leases.live(id, now) else {
            return Err(Error::LeaseNotFound(id));
        };
        if !l.live(now) {
            // (Held past its deadline: etcd's renewal waits for the revoke.)
            return Err(Error::ExpiryHeld(id));
        }
        let ttl = l.ttl;
        let deadline = now.saturating_add(ttl * 1000);
        // Coalesced persistence: write only when the stored deadline would
        // trail the new one by more than the slack restore adds back.
        let persist = l.needs_persist(deadline) || l.remaining != 0;
        if persist {
            let mut w = Write::new(&self.kv);
            w.lease(
                id,
                StoredLease {
                    ttl,
                    deadline: Some(deadline),
                    remaining: 0,
                },
            );
            self.commit(w)?;
        }
        self.leases.renewed(id, deadline, persist);
        self.counts.renewed += 1;
        Ok(ttl)
    }

    /// Revokes a live lease and deletes its keys in one change.
    pub fn revoke(&mut self, now: i64, id: LeaseId) -> Result<Revoked> {
        let now = self.observe(now);
        if self.leases.live(id, now).is_none() {
            return Err(Error::LeaseNotFound(id));
        }
        self.remove_lease(id)
    }

    /// The one path by which a lease ends (revoke, and a grant that reuses
    /// an expired id): its keys go in one revision, in sorted order, then
    /// the lease.
    fn remove_lease(&mut self, id: LeaseId) -> Result<Revoked> {
        let mut w = Write::new(&self.kv);
        let revision = self.stage_removal(&mut w, id)?;
        self.commit(w)?;
        Ok(self.removed(id, revision))
    }

    /// Stages a lease's end in `w` (its keys in a revision of their own);
    /// returns the revision it will have happened at.
    fn stage_removal(&self, w: &mut Write, id: LeaseId) -> Result<i64> {
        let Some(l) = self.leases.get(id) else {
            return Err(Error::LeaseNotFound(id));
        };
        w.next_revision();
        for k in &l.keys {
            // Lease 0: the lease goes as a whole, nothing to detach from.
            w.delete(k.clone(), 0);
        }
        w.drop_lease(id);
        Ok(w.last_revision().unwrap_or(self.kv.revision()))
    }

    /// Takes a lease whose end was committed out of the table. (etcd
    /// deletes its keys one by one in one store transaction.)
    fn removed(&mut self, id: LeaseId, revision: i64) -> Revoked {
        let keys = self.leases.remove(id).map(|l| l.keys).unwrap_or_default();
        self.counts.revoked += 1;
        Tally {
            deletes: keys.len() as u64,
            ..Tally::default()
        }
        .end(&mut self.counts);
        Revoked { id, keys, revision }
    }

    /// Remaining time of a live lease, and optionally its keys.
    pub fn time_to_live(&mut self, now: i64, id: LeaseId, with_keys: bool) -> Result<TimeToLive> {
        let now = self.observe(now);
        let Some(l) = self.leases.live(id, now) else {
            return Err(Error::LeaseNotFound(id));
        };
        let ttl_ms = if l.deadline == FOREVER {
            // Standby: report what a promotion would start from.
            l.remaining_or_ttl()
        } else {
            l.deadline.saturating_sub(now)
        };
        Ok(TimeToLive {
            id,
            ttl: ttl_ms / 1000,
            ttl_ms,
            granted_ttl: l.ttl,
            keys: if with_keys {
                l.keys.clone()
            } else {
                Vec::new()
            },
        })
    }

    /// Live lease ids, soonest deadline first (ties by id).
    pub fn leases(&mut self, now: i64) -> Vec<LeaseId> {
        let now = self.observe(now);
        let mut v: Vec<(i64, LeaseId)> = self
            .leases
            .iter()
            .filter(|(_, l)| self.leases.alive(l, now))
            .map(|(id, l)| (l.deadline, id))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, id)| id).collect()
    }

    /// Expires what is due, at most `revoke_rate` leases in any 1 s of host
    /// time; the rest stay queued. Cheap when nothing is due. Each lease's
    /// keys go in a revision of their own, and all of them in one storage
    /// batch; if the store refuses it, nothing expires (`Tick::error`).
    pub fn tick(&mut self, now: i64) -> Tick {
        let now = self.observe(now);
        let mut tick = Tick {
            expired: std::mem::take(&mut self.outbox),
            error: None,
        };
        if !self.primary || self.leases.held.is_some() {
            return tick;
        }
        let allowance = self.limiter.allowance(now) as usize;
        let due = self.leases.take_due(now, allowance);
        if due.is_empty() {
            return tick;
        }
        let mut w = Write::new(&self.kv);
        let mut ends = Vec::with_capacity(due.len());
        for &(_, id) in &due {
            // Every taken lease is in the table (take_due checked).
            if let Ok(rev) = self.stage_removal(&mut w, id) {
                ends.push((id, rev));
            }
        }
        if let Err(e) = self.commit(w) {
            self.leases.requeue(&due);
            tick.error = Some(e);
            return tick;
        }
        for (id, rev) in ends {
            self.limiter.record(now);
            let r = self.removed(id, rev);
            self.counts.expired += 1;
            tick.expired.push(r);
        }
        tick
    }

    /// Holds expiry from host time `since` (Some) or lets it go on (None):
    /// etcd under its CORRUPT alarm, which refuses the revokes that expiry
    /// makes. A lease alive at `since` then lives on past its deadline with
    /// its keys (TimeToLive gives its TTL as negative, `leases` lists it, a
    /// renewal fails with `ExpiryHeld`) and `tick` expires nothing;
    /// released, those leases expire at the next tick. A hold already in
    /// place keeps its start. The host's to keep: not stored.
    pub fn hold_expiry(&mut self, since: Option<i64>) {
        self.leases.held = since.map(|t| self.leases.held.unwrap_or(t));
    }

    /// Since when expiry is held (`hold_expiry`), if it is.
    pub fn expiry_held(&self) -> Option<i64> {
        self.leases.held
    }

    /// The earliest host time at which `tick` has work, or None.
    pub fn next_deadline(&mut self) -> Option<i64> {
        if !self.outbox.is_empty() {
            return Some(self.now);
        }
        if !self.primary || self.leases.held.is_some() {
            return None;
        }
        let (d, _) = self.leases.next_due()?;
        Some(d.max(self.limiter.next_allowed(self.now)))
    }

    /// Makes this lessor primary: every live lease's deadline becomes
    /// now + extend + its remaining time (its checkpoint if any, else its TTL),
    /// then pile-ups are spread so that at most 3/4 of the revoke rate expire
    /// in any 1 s window. Leases already past their deadline stay expired.
    pub fn promote(&mut self, now: i64, extend_ms: i64) -> Result<()> {
        let now = self.observe(now);
        if extend_ms < 0 {
            return Err(Error::invalid("extend must not be negative"));
        }
        let start = now.saturating_add(extend_ms);
        let mut plan: Vec<(i64, LeaseId)> = self
            .leases
            .iter()
            .filter(|(_, l)| l.live(now))
            .map(|(id, l)| (start.saturating_add(l.remaining_or_ttl()), id))
            .collect();
        if plan.len() >= self.config.revoke_rate as usize {
            spread(&mut plan, per_window(self.config.revoke_rate));
        }
        let mut w = Write::new(&self.kv);
        for &(d, id) in &plan {
            if let Some(l) = self.leases.get(id).filter(|l| l.needs_persist(d)) {
                let mut rec = l.stored_record();
                rec.deadline = Some(d);
                w.lease(id, rec);
            }
        }
        self.commit(w)?;
        self.leases.promoted(&plan);
        self.primary = true;
        Ok(())
    }

    /// Makes this lessor a standby: leases stop expiring and `renew` fails
    /// with NotPrimary. Each live lease's remaining time is checkpointed so
    /// that the next promotion resumes it instead of restarting its TTL.
    pub fn demote(&mut self, now: i64) {
        let now = self.observe(now);
        if !self.primary {
            return;
        }
        self.leases.demote(now);
        self.primary = false;
    }

    /// Records a lease's remaining time (etcd's lease checkpoint), used by the
    /// next promotion instead of the full TTL.
    pub fn checkpoint(&mut self, now: i64, id: LeaseId, remaining_ms: i64) -> Result<()> {
        let now = self.observe(now);
        if remaining_ms < 0 {
            return Err(Error::invalid("remaining must not be negative"));
        }
        let Some(l) = self.leases.live(id, now) else {
            return Err(Error::LeaseNotFound(id));
        };
        // The stored deadline, not the live one: writing the live one would
        // let each restart + checkpoint push an abandoned lease TTL/2 later.
        let mut rec = l.stored_record();
        rec.remaining = remaining_ms;
        let mut w = Write::new(&self.kv);
        w.lease(id, rec);
        self.commit(w)?;
        self.leases.set_remaining(id, remaining_ms);
        Ok(())
    }
}
