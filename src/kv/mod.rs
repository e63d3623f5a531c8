//! The keyspace: keys, values and the revision counter. Knows nothing of
//! leases beyond the id a key carries; which keys are visible is the lease
//! table's rule (`LeaseTable::keeps`), and changes come only through the
//! write path (`crate::write`).
//!
//! Point operations go through a hash map; an ordered set of the same keys
//! serves prefix ranges. Keys are shared (`Arc`) between the map, the set and
//! the lease that holds them, so each key's bytes are stored once.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use crate::lease::LeaseId;

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

    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The key as the keyspace shares it: the stored copy if there is one,
    /// so each key's bytes are held once.
    pub fn key(&self, key: &[u8]) -> Key {
        match self.entries.get_key_value(key) {
            Some((k, _)) => k.clone(),
            None => key.into(),
        }
    }

    /// Sets a key's entry; returns the shared key.
    pub fn insert(&mut self, key: Key, entry: Entry) -> Key {
        if let Some((k, _)) = self.entries.get_key_value(&*key) {
            let k = k.clone();
            self.entries.insert(k.clone(), entry);
            return k;
        }
        self.entries.insert(key.clone(), entry);
        self.order.insert(key.clone());
        key
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
