//! Keys, values and revisions. Knows nothing of leases beyond the id a key
//! carries; hiding the keys of expired leases is the lessor's job.
//!
//! Point operations go through a hash map; an ordered set of the same keys
//! serves prefix ranges. Keys are shared (`Arc`) between the map, the set and
//! the lease that holds them, so each key's bytes are stored once.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use crate::LeaseId;

/// A key's bytes, shared by every index that refers to it.
pub type Key = Arc<[u8]>;

/// One stored key's value and metadata, as etcd's mvccpb.KeyValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Box<[u8]>,
    /// The value was given as text: hosts hand it back as a string.
    pub text: bool,
    /// Revision of the change that created the key: a lock's fencing token.
    pub create_revision: i64,
    pub mod_revision: i64,
    /// Number of changes since creation (1 on create).
    pub version: i64,
    /// 0 when the key belongs to no lease.
    pub lease: LeaseId,
}

pub struct Keyspace {
    entries: HashMap<Key, Entry, foldhash::fast::RandomState>,
    order: BTreeSet<Key>,
    /// Revision of the last change; etcd starts an empty store at 1, so the
    /// first change is revision 2.
    revision: i64,
}

impl Default for Keyspace {
    fn default() -> Self {
        Keyspace {
            entries: HashMap::default(),
            order: BTreeSet::new(),
            revision: 1,
        }
    }
}

impl Keyspace {
    pub fn revision(&self) -> i64 {
        self.revision
    }

    pub fn set_revision(&mut self, revision: i64) {
        self.revision = revision;
    }

    /// Starts a change: the revision all its writes carry.
    pub fn next_revision(&mut self) -> i64 {
        self.revision += 1;
        self.revision
    }

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The shared key and its entry.
    pub fn get_key_value(&self, key: &[u8]) -> Option<(&Key, &Entry)> {
        self.entries.get_key_value(key)
    }

    pub fn insert(&mut self, key: Key, entry: Entry) {
        if self.entries.insert(key.clone(), entry).is_none() {
            self.order.insert(key);
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let e = self.entries.remove(key)?;
        self.order.remove(key);
        Some(e)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keys starting with `prefix`, in byte order.
    pub fn prefix<'a>(&'a self, prefix: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a Entry)> {
        self.order
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |k| k.starts_with(prefix))
            .filter_map(|k| self.entries.get(k).map(|e| (&**k, e)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.entries.iter().map(|(k, e)| (&**k, e))
    }
}
