//! The vocabulary every part of the core shares: lease ids, keys, a key's
//! entry and the limits written into the API. It imports nothing of the
//! crate, so every module can use it.

use std::sync::Arc;

/// A lease id. 0 means "no lease"; negative ids are allowed, as in etcd.
pub type LeaseId = i64;

/// The largest TTL `grant` accepts, in seconds (etcd's MaxLeaseTTL).
pub const MAX_LEASE_TTL: i64 = 9_000_000_000;

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
    /// The change's place among its revision's changes (etcd's
    /// sub-revision), 0 for the first.
    pub sub: u32,
    /// 0 when the key belongs to no lease.
    pub lease: LeaseId,
}

/// The longest host entry name and value, and how many there may be (they
/// are a few small records, not data).
pub const MAX_HOST_NAME: usize = 64;
pub const MAX_HOST_VALUE: usize = 1 << 20;
pub const MAX_HOST_ENTRIES: usize = 64;
