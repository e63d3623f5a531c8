//! The keyspace: keys, values, the revision counter and the history of
//! changes since the last compaction. Knows nothing of leases beyond the id
//! a key carries; which keys are visible is the lease table's rule
//! (`LeaseTable::keeps`), and changes come only through the write path
//! (`crate::write`).
//!
//! Live entries sit in a hash map (point reads and writes); an ordered map of
//! the same keys serves ranges and holds each key's superseded versions, so
//! a read at a past revision finds a key's state there, and a log of
//! (revision, sub-revision, key) in commit order replays the changes for
//! watchers. Compaction drops what no read at or after the compaction point
//! can see.
//!
//! Each change of a revision has a sub-revision, its place among the
//! revision's changes (etcd's): watchers get a revision's changes in that
//! order, also after a restart, and it tells apart the changes of a key that
//! a transaction changes more than once (a from-key delete and a put of a
//! key in it, which etcd allows).

#[cfg(feature = "etcd")]
mod backend;
mod compaction;
#[cfg(feature = "etcd")]
mod hash;
mod load;
mod log;
mod range;

#[cfg(feature = "etcd")]
pub use backend::KeyBucketCursor;
pub use compaction::Sweep;
pub use range::{Bound, RangeRequest, RangeResponse, SortOrder, SortTarget};

use std::collections::{btree_map, BTreeMap, HashMap, VecDeque};

use log::Change;

use crate::types::{Entry, Key};

/// A superseded state of a key: from `revision` (and `sub`) on it was
/// `entry` (None: deleted), until the next version or the live entry.
#[derive(Debug, Clone)]
struct Version {
    revision: i64,
    sub: u32,
    entry: Option<Entry>,
}

/// Where a superseded version is: (revision, sub-revision, key).
pub type VersionAt = (i64, u32, Key);

/// The key's state at `revision` from its versions (oldest first), when the
/// live entry is newer.
fn state_at(past: &[Version], revision: i64) -> Option<&Entry> {
    let n = past.partition_point(|v| v.revision <= revision);
    past.get(n.checked_sub(1)?)?.entry.as_ref()
}

/// One change, as watchers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub key: Key,
    /// The entry written, or None for a delete.
    pub entry: Option<Entry>,
    /// The revision of the change (a delete's `mod_revision`).
    pub revision: i64,
    /// The key's entry before the change, if it had one.
    pub prev: Option<Entry>,
}

impl Event {
    /// The bytes of keys and values the event holds: what a poll counts
    /// against its budget.
    pub fn bytes(&self) -> usize {
        Event::size(&self.key, self.entry.as_ref(), self.prev.as_ref())
    }

    fn size(key: &[u8], entry: Option<&Entry>, prev: Option<&Entry>) -> usize {
        let value = |e: Option<&Entry>| e.map_or(0, |e| e.value.len());
        key.len() + value(entry) + prev.map_or(0, |p| key.len() + p.value.len())
    }
}

pub struct Keyspace {
    /// Seeded per keyspace from the OS, so keys cannot be crafted to collide.
    live: HashMap<Key, Entry, foldhash::fast::FixedState>,
    /// Every live key and every key with history, with its superseded
    /// versions (oldest first; empty for most keys).
    index: BTreeMap<Key, Vec<Version>>,
    /// Every change from the compaction point on, in order, after the
    /// changes a sweep has yet to visit (`compaction.rs`).
    log: VecDeque<Change>,
    /// How many changes at the log's front are before the compaction point
    /// (or at it, unseen there), kept only until a sweep visits their keys.
    unswept: usize,
    /// How many changes after those are at the compaction point and seen
    /// there, whose keys a sweep visits too, and how many it has visited.
    kept: usize,
    kept_swept: usize,
    /// The key the last sweep step ended in, and how many of its versions
    /// (from the front of its history) are deleted from the store but still
    /// held: the key of the sweep's next change.
    partial: Option<(Key, usize)>,
    /// Revision of the last change; etcd starts an empty store at 1, so the
    /// first change is revision 2.
    revision: i64,
    /// Reads before this revision are refused (etcd's compactMainRev): -1
    /// until the first compaction, so that compacting at 0 is one, as on
    /// etcd (it changes nothing but this point, which txn reads check).
    compacted: i64,
    /// What the entries and versions held take, as `cost` counts it.
    bytes: usize,
}

/// What one version of a key is counted as against the quota: its bytes
/// plus a fixed share for the maps and metadata around it.
pub fn cost(key: &[u8], value: &[u8]) -> usize {
    const OVERHEAD: usize = 64;
    OVERHEAD + key.len() + value.len()
}

/// `cost` of a version (None: a deletion mark).
fn version_cost(key: &[u8], entry: Option<&Entry>) -> usize {
    cost(key, entry.map_or(&[][..], |e| &e.value))
}

impl Keyspace {
    pub fn new(hash_seed: u64) -> Keyspace {
        Keyspace {
            live: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(hash_seed)),
            index: BTreeMap::new(),
            log: VecDeque::new(),
            unswept: 0,
            kept: 0,
            kept_swept: 0,
            partial: None,
            revision: 1,
            compacted: -1,
            bytes: 0,
        }
    }

    /// The keyspace's hasher, for maps of its keys (seeded per keyspace).
    pub fn hasher(&self) -> foldhash::fast::FixedState {
        self.live.hasher().clone()
    }

    /// Bytes held by entries and history, as the quota counts them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// The oldest revision reads and watches may ask for (-1 until the
    /// first compaction).
    pub fn compacted(&self) -> i64 {
        self.compacted
    }

    /// A live entry.
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.live.get(key)
    }

    /// The key's entry as of `revision` (at most the current one).
    pub fn get_at(&self, key: &[u8], revision: i64) -> Option<&Entry> {
        if let Some(e) = self.live.get(key) {
            if e.mod_revision <= revision {
                return Some(e);
            }
        }
        state_at(self.index.get(key)?, revision)
    }

    #[cfg(feature = "etcd")]
    /// The version of `key` written by change `sub` of `revision`, if it is
    /// held: Some(entry), or Some(None) for a deletion.
    pub fn version(&self, key: &[u8], revision: i64, sub: u32) -> Option<Option<&Entry>> {
        if let Some(e) = self.live.get(key) {
            if (e.mod_revision, e.sub) == (revision, sub) {
                return Some(Some(e));
            }
        }
        let past = self.index.get(key)?;
        let i = past
            .binary_search_by(|v| (v.revision, v.sub).cmp(&(revision, sub)))
            .ok()?;
        Some(past[i].entry.as_ref())
    }

    /// The key as the keyspace shares it: the stored copy if there is one,
    /// so each key's bytes are held once.
    pub fn key(&self, key: &[u8]) -> Key {
        match self.live.get_key_value(key) {
            Some((k, _)) => k.clone(),
            // A key with history only is shared again when it is put.
            None => key.into(),
        }
    }

    /// The shared key, if the keyspace holds it (live or in history).
    pub fn key_ref(&self, key: &[u8]) -> Option<&Key> {
        self.index.get_key_value(key).map(|(k, _)| k)
    }

    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Live entries in `[from, to)`, in key order.
    pub fn range<'a>(
        &'a self,
        from: &'a [u8],
        to: Bound<'a>,
    ) -> impl Iterator<Item = (&'a Key, &'a Entry)> {
        self.index
            .range::<[u8], _>(to.from(from))
            .filter_map(|(k, _)| self.live.get_key_value(&**k))
    }

    /// Entries in `[from, to)` as of `revision`, in key order.
    pub fn range_at<'a>(
        &'a self,
        from: &'a [u8],
        to: Bound<'a>,
        revision: i64,
    ) -> impl Iterator<Item = (&'a Key, &'a Entry)> {
        self.index
            .range::<[u8], _>(to.from(from))
            .filter_map(move |(k, _)| self.get_at(k, revision).map(|e| (k, e)))
    }

    /// Live keys starting with `prefix`, in byte order.
    pub fn prefix<'a>(&'a self, prefix: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a Entry)> {
        self.index
            .range::<[u8], _>(Bound::Unbounded.from(prefix))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .filter_map(|(k, _)| self.live.get_key_value(&**k))
            .map(|(k, e)| (&**k, e))
    }

    /// Starts the changes of revision `revision` (the write path's).
    pub(crate) fn begin(&mut self, revision: i64) {
        self.revision = revision;
    }

    /// Sets a key's entry at the current revision; returns the shared key.
    pub(crate) fn put(&mut self, key: Key, entry: Entry) -> Key {
        self.bytes += version_cost(&key, Some(&entry));
        // One search of the ordered index, whether the key is there or not.
        let (key, past) = match self.index.entry(key) {
            btree_map::Entry::Occupied(o) => (o.key().clone(), Some(o.into_mut())),
            btree_map::Entry::Vacant(v) => {
                let k = v.key().clone();
                v.insert(Vec::new());
                (k, None)
            }
        };
        let sub = entry.sub;
        let old = self.live.insert(key.clone(), entry);
        let superseded = old.is_some();
        if let Some(old) = old {
            if let Some(past) = past {
                // (A key's first superseded version: room for one, not four.)
                if past.capacity() == 0 {
                    past.reserve_exact(1);
                }
                past.push(Version {
                    revision: old.mod_revision,
                    sub: old.sub,
                    entry: Some(old),
                });
            }
        }
        self.log.push_back(Change {
            revision: self.revision,
            sub,
            key: key.clone(),
            superseded,
        });
        key
    }

    /// Deletes a live key at the current revision, as its change `sub`
    /// (nothing if it is not live).
    pub(crate) fn delete(&mut self, key: &[u8], sub: u32) {
        let Some((key, old)) = self.live.remove_entry(key) else {
            return;
        };
        let Some(past) = self.index.get_mut(&*key) else {
            return;
        };
        // A key with no history yet gets room for exactly these two, not
        // the four a first push makes (a revoke's 100k keys: ~14 MB).
        if past.capacity() == 0 {
            past.reserve_exact(2);
        }
        past.push(Version {
            revision: old.mod_revision,
            sub: old.sub,
            entry: Some(old),
        });
        past.push(Version {
            revision: self.revision,
            sub,
            entry: None,
        });
        self.bytes += version_cost(&key, None);
        self.log.push_back(Change {
            revision: self.revision,
            sub,
            key,
            superseded: true,
        });
    }

    /// Room for `n` more changes in the log (a write of many).
    pub(crate) fn reserve_log(&mut self, n: usize) {
        self.log.reserve(n);
    }

    /// The keys after `after` (all with None) in key order, live or with
    /// history: each with its live entry and its superseded versions as
    /// (revision, sub-revision, entry or None), oldest first (those the
    /// compaction point left unreadable left out, swept or not). `resume`
    /// (key, revision, sub-revision): that key's versions start after that
    /// one, found by binary search (a snapshot resuming inside one key's
    /// long history).
    #[allow(clippy::type_complexity)]
    pub fn keys_after<'a>(
        &'a self,
        after: Option<&[u8]>,
        resume: Option<(Key, i64, u32)>,
    ) -> impl Iterator<
        Item = (
            &'a Key,
            Option<&'a Entry>,
            impl Iterator<Item = (i64, u32, Option<&'a Entry>)> + 'a,
        ),
    > + 'a {
        use std::ops::Bound::{Excluded, Unbounded};
        let from = after.map_or(Unbounded, Excluded);
        self.index
            .range::<[u8], _>((from, Unbounded))
            .map(move |(k, past)| {
                let mut start = self.droppable(k, past);
                if let Some((_, rev, sub)) = resume.as_ref().filter(|r| r.0 == *k) {
                    let done = past.partition_point(|v| (v.revision, v.sub) <= (*rev, *sub));
                    start = start.max(done);
                }
                let versions = past[start..]
                    .iter()
                    .map(|v| (v.revision, v.sub, v.entry.as_ref()));
                (k, self.live.get(&**k), versions)
            })
    }

    /// Every version held up to revision `upto`, live or superseded, in
    /// commit order (revision, then sub-revision): the changes since the
    /// compaction point and each key's state kept at it (None: a deletion),
    /// what etcd's backend holds.
    pub fn versions(&self, upto: i64) -> Vec<(i64, u32, &Key, Option<&Entry>)> {
        let mut out = Vec::new();
        for (k, versions) in self.key_versions(upto) {
            out.extend(versions.map(|(rev, sub, e)| (rev, sub, k, e)));
        }
        crate::order::sort_by(&mut out, |a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        out
    }

    /// Each key in key order with its versions up to `upto`, oldest first
    /// (the superseded ones, then the live entry): (revision, sub-revision,
    /// entry or None for a deletion). Not those the compaction point left
    /// unreadable: a sweep has yet to drop them.
    #[allow(clippy::type_complexity)]
    fn key_versions(
        &self,
        upto: i64,
    ) -> impl Iterator<Item = (&Key, impl Iterator<Item = (i64, u32, Option<&Entry>)>)> {
        self.index.iter().map(move |(k, past)| {
            let stale = self.droppable(k, past);
            let n = past.partition_point(|v| v.revision <= upto).max(stale);
            let live = self.live.get(&**k).filter(|e| e.mod_revision <= upto);
            let versions = past[stale..n]
                .iter()
                .map(|v| (v.revision, v.sub, v.entry.as_ref()))
                .chain(live.map(|e| (e.mod_revision, e.sub, Some(e))));
            (k, versions)
        })
    }
}
