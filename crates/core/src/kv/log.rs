//! The change log: its entries, and the log read back: where a revision
//! starts in it, the changes from there on, and a change as the event
//! watchers are given.

use super::{state_at, Event, Keyspace};
use crate::types::{Entry, Key};

/// One key change in the log: change `sub` of `revision`.
#[derive(Debug, Clone)]
pub(super) struct Change {
    pub revision: i64,
    pub sub: u32,
    pub key: Key,
    /// Whether the change put a superseded version in the key's history
    /// (a put over a live key, a delete; always, for changes a restore
    /// rebuilt): only such changes' keys can have versions a sweep drops
    /// (`plan_sweep`).
    pub superseded: bool,
}

impl Keyspace {
    /// The log position of the first change from revision `from` on (not
    /// one a sweep has yet to visit and drop).
    pub fn position(&self, from: i64) -> usize {
        self.log
            .partition_point(|c| c.revision < from)
            .max(self.unswept)
    }

    /// The (position in the log, revision, sub-revision, key) of each
    /// change from `from` on (at or after the compaction point), in commit
    /// order. A position names one change until the log next changes.
    pub fn changes_from(&self, from: i64) -> impl Iterator<Item = (usize, i64, u32, &Key)> + '_ {
        let start = self.position(from);
        self.log
            .range(start..)
            .enumerate()
            .map(move |(i, c)| (start + i, c.revision, c.sub, &c.key))
    }

    /// The change `(revision, sub)` of `key`, as watchers see it.
    pub fn event(&self, revision: i64, sub: u32, key: &Key) -> Event {
        let (entry, prev) = self.change(revision, sub, key);
        Event {
            key: key.clone(),
            entry: entry.cloned(),
            revision,
            prev: prev.cloned(),
        }
    }

    /// `Event::bytes` of that change's event (with or without its
    /// previous entry), without making it.
    pub fn event_bytes(&self, revision: i64, sub: u32, key: &Key, prev_kv: bool) -> usize {
        let (entry, prev) = self.change(revision, sub, key);
        Event::size(key, entry, prev.filter(|_| prev_kv))
    }

    /// The entry change `(revision, sub)` of `key` wrote (None for a
    /// delete), and the key's entry before it, if it had one.
    fn change(&self, revision: i64, sub: u32, key: &Key) -> (Option<&Entry>, Option<&Entry>) {
        let live = self.live.get(&**key);
        let past = self.index.get(&**key).map_or(&[][..], |p| &p[..]);
        // A superseded version if a later change in the revision (or after
        // it) replaced it, else the live entry.
        let entry = match past.binary_search_by_key(&(revision, sub), |v| (v.revision, v.sub)) {
            Ok(at) => past[at].entry.as_ref(),
            Err(_) => live.filter(|e| (e.mod_revision, e.sub) == (revision, sub)),
        };
        // A create has no previous entry, even where it replaced the entry
        // of a lease that had expired without a tick deleting it yet; and
        // before the compaction point there is none to give (etcd's read of
        // it fails as compacted, so it leaves prev_kv out).
        let prev = match entry {
            Some(e) if e.version == 1 => None,
            _ if revision - 1 < self.compacted => None,
            _ => match live {
                Some(e) if e.mod_revision < revision => Some(e),
                _ => state_at(past, revision - 1),
            },
        };
        (entry, prev)
    }
}
