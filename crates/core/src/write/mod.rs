//! The one write path. Every change to the lessor's durable state (keys,
//! lease records, the revision) is staged in a [`Write`], turned into one
//! storage batch, handed to the store, and only then applied: a refused
//! batch changes nothing. The key changes of one operation share one
//! revision; this is the only place a revision is created (as etcd applies
//! each request through one write transaction of its store). A tick that
//! expires many leases stages each in a revision of its own
//! (`next_revision`) but writes them all as one batch: one fsync, not one
//! per lease.

mod batch;

use crate::error::Result;
use crate::kv::{cost, Keyspace, Sweep};
use crate::lease::LeaseTable;
use crate::storage::{Store, StoredLease};
use crate::types::{Entry, Key, LeaseId};

enum KeyChange {
    /// `entry` was built for the revision it carries (its mod_revision);
    /// `old_lease` is the lease the key belonged to before (0 for none),
    /// which loses it if different.
    Put {
        key: Key,
        entry: Entry,
        old_lease: LeaseId,
    },
    Delete {
        key: Key,
        lease: LeaseId,
        revision: i64,
        sub: u32,
    },
}

impl KeyChange {
    fn key(&self) -> &Key {
        match self {
            KeyChange::Put { key, .. } | KeyChange::Delete { key, .. } => key,
        }
    }

    fn revision(&self) -> i64 {
        match self {
            KeyChange::Put { entry, .. } => entry.mod_revision,
            KeyChange::Delete { revision, .. } => *revision,
        }
    }

    /// The key's entry after the change (None: deleted).
    fn entry(&self) -> Option<&Entry> {
        match self {
            KeyChange::Put { entry, .. } => Some(entry),
            KeyChange::Delete { .. } => None,
        }
    }
}

/// The changes of one operation, staged.
pub struct Write {
    revision: i64,
    /// The sub-revision of the next key change in `revision`.
    sub: u32,
    keys: Vec<KeyChange>,
    leases: Vec<(LeaseId, Option<StoredLease>)>,
    /// A compaction point to move to.
    compaction: Option<i64>,
    /// A step of sweeping what earlier compactions left unreadable.
    sweep: Option<Sweep>,
    /// Store the compaction point even if it does not move (a store's first
    /// key change marks it as one that keeps history).
    mark_compacted: bool,
    /// What the staged key changes add to the keyspace's bytes.
    added_bytes: usize,
    /// Per lease, how many keys the staged puts attach to it that it does
    /// not have yet (a transaction's, against `maxKeysPerLease`).
    attached: Vec<(LeaseId, usize)>,
    /// Whether each staged key is greater than the one staged before it
    /// (then no key is changed twice).
    increasing: bool,
}

impl Write {
    /// Starts a write on top of `kv`'s current revision.
    pub fn new(kv: &Keyspace) -> Write {
        Write {
            revision: kv.revision() + 1,
            sub: 0,
            keys: Vec::new(),
            leases: Vec::new(),
            compaction: None,
            sweep: None,
            mark_compacted: false,
            added_bytes: 0,
            attached: Vec::new(),
            increasing: true,
        }
    }

    /// The revision the key changes staged next carry.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// Starts the next revision, if the current one has changes.
    pub fn next_revision(&mut self) {
        if self
            .keys
            .last()
            .is_some_and(|c| c.revision() == self.revision)
        {
            self.revision += 1;
            self.sub = 0;
        }
    }

    /// The revision of the last staged key change, if any.
    pub fn last_revision(&self) -> Option<i64> {
        self.keys.last().map(KeyChange::revision)
    }

    /// Stages a put: `entry` was built for this revision; it takes the next
    /// sub-revision.
    pub fn put(&mut self, key: Key, mut entry: Entry, old_lease: LeaseId) {
        entry.sub = self.sub;
        self.sub += 1;
        self.added_bytes += cost(&key, &entry.value);
        self.follow(&key);
        self.keys.push(KeyChange::Put {
            key,
            entry,
            old_lease,
        });
    }

    pub fn delete(&mut self, key: Key, lease: LeaseId) {
        self.added_bytes += cost(&key, &[]);
        self.follow(&key);
        let (revision, sub) = (self.revision, self.sub);
        self.sub += 1;
        self.keys.push(KeyChange::Delete {
            key,
            lease,
            revision,
            sub,
        });
    }

    /// Notes whether `key`, staged next, keeps the staged keys increasing.
    fn follow(&mut self, key: &Key) {
        if self.increasing {
            self.increasing = self.keys.last().is_none_or(|c| c.key() < key);
        }
    }

    /// Room for `n` more key changes (an operation of many: a revoke, a
    /// DeleteRange), so the list is not copied as it grows.
    pub fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
    }

    /// Moves the compaction point to `revision`; what it leaves unreadable
    /// is dropped by later sweeps.
    pub fn compact(&mut self, revision: i64) {
        self.compaction = Some(revision);
    }

    /// Sweeps about `max` versions that compactions left unreadable (see
    /// `Keyspace::plan_sweep`), if any are left. Planned on `kv` as it is,
    /// so it is applied before this write's own changes.
    pub fn sweep(&mut self, kv: &Keyspace, max: usize) {
        if kv.unswept() > 0 {
            self.sweep = Some(kv.plan_sweep(max));
        }
    }

    /// How many versions this write's sweep drops.
    pub fn swept(&self) -> usize {
        self.sweep.as_ref().map_or(0, |s| s.dropped.len())
    }

    /// Stores the current compaction point with this write.
    pub fn mark_compacted(&mut self) {
        self.mark_compacted = true;
    }

    /// What the staged key changes add to the keyspace's bytes.
    pub fn added_bytes(&self) -> usize {
        self.added_bytes
    }

    /// How many key changes are staged.
    pub fn key_changes(&self) -> usize {
        self.keys.len()
    }

    /// Whether any key changes are staged (they will take a new revision).
    pub fn changes_keys(&self) -> bool {
        !self.keys.is_empty()
    }

    /// A key as this write leaves it, if the write changes it: `Some(None)`
    /// when it deletes it. Lets the ops of a transaction read earlier ones.
    #[inline(never)]
    pub fn staged(&self, key: &[u8]) -> Option<Option<&Entry>> {
        self.keys.iter().rev().find_map(|c| match c {
            KeyChange::Put { key: k, entry, .. } if **k == *key => Some(Some(entry)),
            KeyChange::Delete { key: k, .. } if **k == *key => Some(None),
            _ => None,
        })
    }

    /// How many keys staged puts attach to `lease` that it did not have.
    pub fn attached(&self, lease: LeaseId) -> usize {
        self.attached
            .iter()
            .find(|(l, _)| *l == lease)
            .map_or(0, |(_, n)| *n)
    }

    /// Counts a staged put that attaches a key `lease` did not have.
    pub fn attach(&mut self, lease: LeaseId) {
        match self.attached.iter_mut().find(|(l, _)| *l == lease) {
            Some((_, n)) => *n += 1,
            None => self.attached.push((lease, 1)),
        }
    }

    /// The keys this write changes.
    pub fn staged_keys(&self) -> impl Iterator<Item = &Key> {
        self.keys.iter().map(KeyChange::key)
    }

    /// Stores a lease record (grant, renewal, checkpoint, promotion).
    pub fn lease(&mut self, id: LeaseId, record: StoredLease) {
        self.leases.push((id, Some(record)));
    }

    /// Drops a lease record (revoke, expiry).
    pub fn drop_lease(&mut self, id: LeaseId) {
        self.leases.push((id, None));
    }

    /// Makes the write durable, then applies its key changes to `kv` (and the
    /// key sets of `leases`). Lease records are the caller's to apply after
    /// this succeeds. Returns the revision: the last new one if keys
    /// changed, else the unchanged current one.
    pub fn commit(
        mut self,
        kv: &mut Keyspace,
        leases: &mut LeaseTable,
        store: &mut Store,
    ) -> Result<i64> {
        if store.attached() {
            let batch = self.batch(kv);
            if !batch.is_empty() {
                store.write(&batch)?;
            }
        }
        // Before the key changes: the sweep was planned on the state before
        // them, and the compaction sorts the changes up to its point.
        if let Some(step) = self.sweep.take() {
            kv.sweep(step);
        }
        if let Some(rev) = self.compaction {
            kv.compact(rev);
        }
        let Some(last) = self.last_revision() else {
            return Ok(kv.revision());
        };
        kv.reserve_log(self.keys.len());
        // Keys leaving one lease in a row are taken out of its list at once,
        // in order with the rest (an attach first ends the run).
        let mut leaving = Detaching::default();
        for c in self.keys {
            kv.begin(c.revision());
            match c {
                KeyChange::Put {
                    key,
                    entry,
                    old_lease,
                } => {
                    let new_lease = entry.lease;
                    let key = kv.put(key, entry);
                    if old_lease != new_lease {
                        // etcd's lease switch: the old holder loses the key.
                        leaving.push(leases, old_lease, key.clone());
                        leaving.end(leases);
                        leases.attach(new_lease, &key);
                    }
                }
                KeyChange::Delete {
                    key, lease, sub, ..
                } => {
                    kv.delete(&key, sub);
                    leaving.push(leases, lease, key);
                }
            }
        }
        leaving.end(leases);
        Ok(last)
    }
}

/// A run of keys leaving one lease, detached together (`LeaseTable::detach`).
#[derive(Default)]
struct Detaching {
    lease: LeaseId,
    keys: Vec<Key>,
}

impl Detaching {
    fn push(&mut self, leases: &mut LeaseTable, lease: LeaseId, key: Key) {
        if lease == 0 {
            return;
        }
        if lease != self.lease {
            self.end(leases);
            self.lease = lease;
        }
        self.keys.push(key);
    }

    fn end(&mut self, leases: &mut LeaseTable) {
        if !self.keys.is_empty() {
            leases.detach(self.lease, &self.keys);
            self.keys.clear();
        }
    }
}
