//! Lease operations: grant, renew, revoke, TimeToLive, promote and demote,
//! checkpoints, and expiry (what is due comes from `lease/expiry.rs`; the
//! ends go through the write path like a revoke). A lease's end takes its
//! keys in a revision of its own.

use crate::counts::Tally;
use crate::error::{Error, Result};
use crate::lease::{per_window, spread, Lease, FOREVER};
use crate::lessor::Lessor;
use crate::ops::{Granted, Revoked, Tick, TimeToLive};
use crate::storage::StoredLease;
use crate::types::{LeaseId, MAX_LEASE_TTL};
use crate::write::Write;

impl Lessor {
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
                self.expiry.report(expired);
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
        w.reserve(l.keys.len());
        for k in l.keys.iter() {
            // Lease 0: the lease goes as a whole, nothing to detach from.
            w.delete(k.clone(), 0);
        }
        w.drop_lease(id);
        Ok(w.last_revision().unwrap_or(self.kv.revision()))
    }

    /// Takes a lease whose end was committed out of the table. (etcd
    /// deletes its keys one by one in one store transaction.)
    fn removed(&mut self, id: LeaseId, revision: i64) -> Revoked {
        let keys = self
            .leases
            .remove(id)
            .map_or_else(Vec::new, |l| l.keys.into_vec());
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
                l.keys.to_vec()
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
        crate::order::sort_by(&mut v, Ord::cmp);
        v.into_iter().map(|(_, id)| id).collect()
    }

    /// Expires what is due, at most `revoke_rate` leases in any 1 s of host
    /// time; the rest stay queued. Cheap when nothing is due. Each lease's
    /// keys go in a revision of their own, and all of them in one storage
    /// batch; if the store refuses it, nothing expires (`Tick::error`).
    pub fn tick(&mut self, now: i64) -> Tick {
        let now = self.observe(now);
        let (mut tick, due) = self.expiry.start(&mut self.leases, now, self.primary);
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
            self.expiry.record(now);
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
        self.expiry
            .next_deadline(&mut self.leases, self.now, self.primary)
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
