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

// The lessor's operations, one concept each; they use the front, never
// the other way round.
#[cfg(feature = "etcd")]
mod etcd;
mod history;
mod host;
mod keys;
mod leases;
pub(crate) mod snapshot;
mod txn;
mod watch;

use crate::config::Config;
use crate::counts::Counts;
use crate::error::Result;
use crate::kv::Keyspace;
use crate::lease::{random_u64, Expiry, LeaseTable};
use crate::storage::{Storage, Store};
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
    pub(crate) expiry: Expiry,
    pub(crate) primary: bool,
    /// The highest host time seen.
    pub(crate) now: i64,
    pub(crate) store: Store,
    pub(crate) watchers: Watchers,
    /// Whether the store has recorded the compaction point (a store written
    /// before history was kept has not, and restores without history).
    pub(crate) history_stored: bool,
    /// The host's entries, kept in the store beside the state (`lessor/host.rs`).
    pub(crate) host: Vec<(String, Vec<u8>)>,
    /// What it has done, as etcd's metrics count it.
    pub(crate) counts: Counts,
}

impl Lessor {
    pub fn new(config: Config) -> Result<Lessor> {
        config.validate()?;
        Ok(Lessor {
            expiry: Expiry::new(config.revoke_rate),
            config,
            leases: LeaseTable::new()?,
            kv: Keyspace::new(random_u64()?),
            primary: true,
            now: i64::MIN,
            store: Store::default(),
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
}
