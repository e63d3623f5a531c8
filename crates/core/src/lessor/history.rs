//! The history the lessor keeps: its size, the versions held, and
//! compaction as etcd's Compact (the point moves at once, the versions it
//! leaves unreadable are swept in steps), also made to give space back
//! when a write would pass the quota.

use crate::error::{Error, Result};
use crate::lessor::Lessor;
use crate::types::Entry;
use crate::write::Write;

impl Lessor {
    /// Runs a write; if it would pass the quota while history no watcher
    /// needs is held, compacts that history and tries once more (history
    /// is the first thing to give, rather than refusing writes).
    pub(super) fn with_space<T>(&mut self, write: impl Fn(&mut Self) -> Result<T>) -> Result<T> {
        match write(self) {
            Err(Error::NoSpace) => {
                let wanted = self.watchers.oldest_wanted().unwrap_or(i64::MAX);
                let to = wanted.min(self.kv.revision());
                let moves = self.compaction_moves_to(to);
                if !moves && self.kv.unswept() == 0 {
                    return Err(Error::NoSpace);
                }
                if moves {
                    let mut w = Write::new(&self.kv);
                    w.compact(to);
                    self.commit(w)?;
                }
                // The space comes back only once swept: all of it, now.
                while self.compact_step(usize::MAX)? > 0 {}
                write(self)
            }
            r => r,
        }
    }

    /// The compaction point: reads and watches before it are refused. -1
    /// until the first compaction (etcd's), which may be at 0.
    pub fn compacted(&self) -> i64 {
        self.kv.compacted()
    }

    /// Every version of every key held up to revision `upto` (history since
    /// the compaction point, each key's state kept at it, and the live
    /// entries), in commit order: (revision, sub-revision, key, entry or
    /// None for a deletion): what etcd's backend would hold. It walks
    /// everything and sorts it, so it costs the store's size.
    pub fn versions(&self, upto: i64) -> Vec<(i64, u32, &[u8], Option<&Entry>)> {
        self.kv
            .versions(upto)
            .into_iter()
            .map(|(rev, sub, k, e)| (rev, sub, &**k, e))
            .collect()
    }

    /// Bytes of keys, values and history, as the quota counts them.
    pub fn size_bytes(&self) -> usize {
        self.kv.bytes()
    }

    /// Forgets history before `revision` (etcd's Compact): reads and
    /// watches before it are refused from now on. Returns the current
    /// revision. The versions it leaves unreadable are dropped by later
    /// steps (`compact_step`), and a few with each write, so that a large
    /// compaction never stops the host for its whole length.
    pub fn compact(&mut self, revision: i64) -> Result<i64> {
        if revision <= self.kv.compacted() {
            return Err(Error::Compacted(self.kv.compacted()));
        }
        if revision > self.kv.revision() {
            return Err(Error::FutureRevision);
        }
        let mut w = Write::new(&self.kv);
        w.compact(revision);
        let rev = self.commit(w)?;
        // etcd reads a key to answer with the current revision.
        self.counts.ranges += 1;
        Ok(rev)
    }

    /// Drops about `max` of the versions compactions left unreadable (one
    /// storage batch). Returns how many changes are left to visit: 0 once
    /// the compactions so far are done (etcd's physical compaction).
    pub fn compact_step(&mut self, max: usize) -> Result<usize> {
        if self.kv.unswept() > 0 {
            let mut w = Write::new(&self.kv);
            w.sweep(&self.kv, max);
            self.commit(w)?;
        }
        Ok(self.kv.unswept())
    }

    /// How many changes sweeps have yet to visit (`compact_step`): 0 once
    /// every compaction so far has dropped what it left unreadable.
    pub fn compaction_pending(&self) -> usize {
        self.kv.unswept()
    }
}
