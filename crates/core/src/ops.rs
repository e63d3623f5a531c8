//! What the lessor's operations take and return.

use crate::error::Error;
use crate::kv::{RangeRequest, RangeResponse};
use crate::types::{Entry, Key, LeaseId};

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
    /// Keep the key's current value (etcd's ignore_value); the key must exist.
    pub ignore_value: bool,
    /// Keep the key's current lease (etcd's ignore_lease); the key must exist.
    pub ignore_lease: bool,
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

/// What a compare looks at, with the value it is compared to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareTarget {
    Version(i64),
    Create(i64),
    Mod(i64),
    Value(Vec<u8>),
    Lease(LeaseId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareResult {
    Equal,
    Greater,
    Less,
    NotEqual,
}

/// etcd's Compare: holds when every key in the range compares as asked (a
/// missing key compares as zeros, and never holds for a value compare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compare {
    pub key: Vec<u8>,
    /// As in [`RangeRequest`]: empty for the key alone.
    pub range_end: Vec<u8>,
    pub target: CompareTarget,
    pub result: CompareResult,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PutRequest {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub options: PutOptions,
}

/// etcd's DeleteRangeRequest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRequest {
    pub key: Vec<u8>,
    /// As in [`RangeRequest`]: empty for the key alone.
    pub range_end: Vec<u8>,
    pub prev_kv: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteResponse {
    pub deleted: i64,
    /// The deleted entries, when asked for.
    pub prev_kvs: Vec<(Key, Entry)>,
    pub revision: i64,
}

/// One op of a transaction branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Range(RangeRequest),
    Put(PutRequest),
    Delete(DeleteRequest),
    Txn(TxnRequest),
}

/// etcd's TxnRequest: if every compare holds, the success ops run, else the
/// failure ops; all of them in one revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnRequest {
    pub compare: Vec<Compare>,
    pub success: Vec<Op>,
    pub failure: Vec<Op>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResponse {
    Range(RangeResponse),
    Put(PutResult),
    Delete(DeleteResponse),
    Txn(TxnResponse),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnResponse {
    pub succeeded: bool,
    pub responses: Vec<OpResponse>,
    /// The transaction's revision; 0 for a nested one (as etcd reports it).
    pub revision: i64,
}
