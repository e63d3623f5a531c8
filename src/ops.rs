//! What the lessor's operations take and return.

use crate::error::Error;
use crate::kv::{Entry, Key};
use crate::lease::LeaseId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granted {
    pub id: LeaseId,
    /// The granted TTL in seconds (after raising to the minimum).
    pub ttl: i64,
}

/// A lease that was revoked or expired, with the keys deleted with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    pub id: LeaseId,
    /// Sorted.
    pub keys: Vec<Key>,
    /// The revision of the deletion, or the unchanged store revision when the
    /// lease had no keys.
    pub revision: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeToLive {
    pub id: LeaseId,
    /// Remaining whole seconds, truncated as etcd reports them.
    pub ttl: i64,
    pub ttl_ms: i64,
    pub granted_ttl: i64,
    /// Sorted; empty unless asked for.
    pub keys: Vec<Key>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutOptions {
    /// Attach the key to this lease; 0 detaches it from any lease.
    pub lease: LeaseId,
    /// Create-only: write nothing if the key exists (the lock pattern).
    pub if_absent: bool,
    /// The value is text; hosts give it back as a string.
    pub text: bool,
    /// Return the previous entry.
    pub prev: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The key did not exist before (for `if_absent`: the put happened).
    pub created: bool,
    /// The revision of this change; the unchanged revision if nothing was written.
    pub revision: i64,
    /// The previous entry if asked for, and always the holder's entry when an
    /// `if_absent` put found the key taken.
    pub prev: Option<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteResult {
    pub deleted: bool,
    pub revision: i64,
    pub prev: Option<Entry>,
}

/// What one `tick` did: the leases it expired, and the storage error that
/// stopped it early, if any (the failed lease stays queued).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tick {
    pub expired: Vec<Revoked>,
    pub error: Option<Error>,
}
