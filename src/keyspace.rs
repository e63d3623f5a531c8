//! Keys, values and revisions. Knows nothing of leases beyond the id a key
//! carries; hiding the keys of expired leases is the lessor's job.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::LeaseId;

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
    entries: BTreeMap<Box<[u8]>, Entry>,
    /// Revision of the last change; etcd starts an empty store at 1, so the
    /// first change is revision 2.
    revision: i64,
}

impl Default for Keyspace {
    fn default() -> Self {
        Keyspace {
            entries: BTreeMap::new(),
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

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.entries.get_mut(key)
    }

    pub fn insert(&mut self, key: Box<[u8]>, entry: Entry) {
        self.entries.insert(key, entry);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        self.entries.remove(key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keys starting with `prefix`, in byte order.
    pub fn prefix<'a>(&'a self, prefix: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a Entry)> {
        self.entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, e)| (&**k, e))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.entries.iter().map(|(k, e)| (&**k, e))
    }
}
