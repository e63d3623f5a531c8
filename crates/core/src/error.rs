//! The one error type of the core. `code()` names are stable: the JS binding
//! exposes them as `err.code`.

use std::fmt;

use crate::types::{LeaseId, MAX_LEASE_TTL};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The lease does not exist, or its deadline has passed.
    LeaseNotFound(LeaseId),
    /// `grant` with an explicit id that a live lease already has.
    LeaseExists(LeaseId),
    /// `grant` with a TTL above [`MAX_LEASE_TTL`] seconds.
    LeaseTtlTooLarge(i64),
    /// `renew` on a standby (demoted) lessor.
    NotPrimary,
    /// `renew` of a lease past its deadline while expiry is held
    /// (`Lessor::hold_expiry`): it ends once expiry goes on.
    ExpiryHeld(LeaseId),
    /// Input outside what the API accepts (limits, empty key, bad time...).
    InvalidArgument(String),
    /// The host's storage refused the write; nothing changed.
    StorageFailed(String),
    /// A stored entry could not be read back during restore.
    CorruptEntry { key: String, reason: String },
    /// A read or watch asked for a revision before the compaction point
    /// (which is given), or a compaction for one at or before it.
    Compacted(i64),
    /// A read or compaction asked for a revision after the current one.
    FutureRevision,
    /// A put that keeps the value or lease of a key that does not exist, or
    /// an empty transaction op (etcd's "key not found").
    KeyNotFound,
    /// Two writes to one key in one transaction (one revision).
    DuplicateKey,
    /// A transaction with more compares or ops than the limit.
    TooManyOps,
    /// The OS gave no randomness (for lease ids and hash seeds).
    NoEntropy(String),
    /// The write would take the data past `Config::quota_bytes`.
    NoSpace,
}

impl Error {
    pub fn invalid(why: impl Into<String>) -> Error {
        Error::InvalidArgument(why.into())
    }

    pub fn code(&self) -> &'static str {
        match self {
            Error::LeaseNotFound(_) => "LeaseNotFound",
            Error::LeaseExists(_) => "LeaseExists",
            Error::LeaseTtlTooLarge(_) => "LeaseTtlTooLarge",
            Error::NotPrimary => "NotPrimary",
            Error::ExpiryHeld(_) => "ExpiryHeld",
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::StorageFailed(_) => "StorageFailed",
            Error::CorruptEntry { .. } => "CorruptEntry",
            Error::Compacted(_) => "Compacted",
            Error::FutureRevision => "FutureRevision",
            Error::KeyNotFound => "KeyNotFound",
            Error::DuplicateKey => "DuplicateKey",
            Error::TooManyOps => "TooManyOps",
            Error::NoEntropy(_) => "NoEntropy",
            Error::NoSpace => "NoSpace",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LeaseNotFound(id) => write!(f, "lease {:016x} not found", *id as u64),
            Error::LeaseExists(id) => write!(f, "lease {:016x} already exists", *id as u64),
            Error::LeaseTtlTooLarge(ttl) => write!(
                f,
                "lease TTL {ttl}s is too large (at most {}s)",
                MAX_LEASE_TTL
            ),
            Error::NotPrimary => write!(f, "not a primary lessor"),
            Error::ExpiryHeld(id) => write!(
                f,
                "lease {:016x} is past its deadline; it ends once expiry is no longer held",
                *id as u64
            ),
            Error::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Error::StorageFailed(why) => write!(f, "storage write failed: {why}"),
            Error::CorruptEntry { key, reason } => {
                write!(f, "stored entry \"{key}\" is corrupt: {reason}")
            }
            Error::Compacted(rev) => write!(
                f,
                "required revision has been compacted (compacted at {rev})"
            ),
            Error::FutureRevision => write!(f, "required revision is a future revision"),
            Error::KeyNotFound => write!(f, "key not found"),
            Error::DuplicateKey => write!(f, "duplicate key given in txn request"),
            Error::TooManyOps => write!(f, "too many operations in txn request"),
            Error::NoEntropy(why) => write!(f, "no randomness from the OS: {why}"),
            Error::NoSpace => write!(f, "database space exceeded"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
