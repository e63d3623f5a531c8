//! The one error type of the core. `code()` names are stable: the JS binding
//! exposes them as `err.code`.

use std::fmt;

use crate::text::Text;
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

impl Error {
    /// The message, as `Display` writes it (built without `core::fmt`: the
    /// JS binding takes it from here, and fmt is kilobytes of wasm).
    pub fn message(&self) -> String {
        let lease = |id: &LeaseId, rest: &str| Text::new("lease ").hex(*id as u64).s(rest).into();
        match self {
            Error::LeaseNotFound(id) => lease(id, " not found"),
            Error::LeaseExists(id) => lease(id, " already exists"),
            Error::LeaseTtlTooLarge(ttl) => Text::new("lease TTL ")
                .dec(*ttl)
                .s("s is too large (at most ")
                .dec(MAX_LEASE_TTL)
                .s("s)")
                .into(),
            Error::NotPrimary => "not a primary lessor".into(),
            Error::ExpiryHeld(id) => lease(
                id,
                " is past its deadline; it ends once expiry is no longer held",
            ),
            Error::InvalidArgument(why) => Text::new("invalid argument: ").s(why).into(),
            Error::StorageFailed(why) => Text::new("storage write failed: ").s(why).into(),
            Error::CorruptEntry { key, reason } => Text::new("stored entry \"")
                .s(key)
                .s("\" is corrupt: ")
                .s(reason)
                .into(),
            Error::Compacted(rev) => {
                Text::new("required revision has been compacted (compacted at ")
                    .dec(*rev)
                    .s(")")
                    .into()
            }
            Error::FutureRevision => "required revision is a future revision".into(),
            Error::KeyNotFound => "key not found".into(),
            Error::DuplicateKey => "duplicate key given in txn request".into(),
            Error::TooManyOps => "too many operations in txn request".into(),
            Error::NoEntropy(why) => Text::new("no randomness from the OS: ").s(why).into(),
            Error::NoSpace => "database space exceeded".into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn messages_are_those_format_wrote() {
        let id = -2i64;
        let cases = [
            (Error::LeaseNotFound(id), format!("lease {:016x} not found", id as u64)),
            (Error::LeaseExists(255), format!("lease {:016x} already exists", 255)),
            (
                Error::LeaseTtlTooLarge(9_000_000_001),
                "lease TTL 9000000001s is too large (at most 9000000000s)".into(),
            ),
            (Error::NotPrimary, "not a primary lessor".into()),
            (
                Error::ExpiryHeld(1),
                "lease 0000000000000001 is past its deadline; it ends once expiry is no longer held"
                    .into(),
            ),
            (Error::invalid("x"), "invalid argument: x".into()),
            (Error::StorageFailed("y".into()), "storage write failed: y".into()),
            (
                Error::CorruptEntry {
                    key: "v1/key/a".into(),
                    reason: "bad".into(),
                },
                "stored entry \"v1/key/a\" is corrupt: bad".into(),
            ),
            (
                Error::Compacted(-1),
                "required revision has been compacted (compacted at -1)".into(),
            ),
            (Error::FutureRevision, "required revision is a future revision".into()),
            (Error::KeyNotFound, "key not found".into()),
            (Error::DuplicateKey, "duplicate key given in txn request".into()),
            (Error::TooManyOps, "too many operations in txn request".into()),
            (Error::NoEntropy("z".into()), "no randomness from the OS: z".into()),
            (Error::NoSpace, "database space exceeded".into()),
        ];
        for (e, want) in cases {
            assert_eq!(e.message(), want);
            assert_eq!(e.to_string(), want);
        }
    }
}
