//! The lessor's settings and their defaults (the one place defaults are
//! defined; the JS wrapper and the docs take them from here).

use crate::error::{Error, Result};
use crate::text::Text;
use crate::types::MAX_LEASE_TTL;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Shorter TTLs are raised to this (seconds). Default 1.
    pub min_ttl: i64,
    /// At most this many leases expire in any 1 s of host time. Default 1000.
    pub revoke_rate: u32,
    /// Default 4096 bytes.
    pub max_key_bytes: usize,
    /// Default 1 MiB.
    pub max_value_bytes: usize,
    /// Default 10,000.
    pub max_keys_per_lease: usize,
    /// At most this many compares, and ops per branch, in one transaction.
    /// Default 128 (etcd's --max-txn-ops).
    pub max_txn_ops: usize,
    /// How many revisions of history are kept for reads at past revisions
    /// and watches from the past; older ones are compacted as new ones come.
    /// Default 1000; `i64::MAX` keeps everything until `compact` (etcd's
    /// default, without auto-compaction).
    pub history: i64,
    /// At most this many bytes of keys, values and history (see
    /// `kv::cost`); a write past it fails with NoSpace (etcd's
    /// --quota-backend-bytes). Default and most: 1 GiB in wasm, whose 4 GiB
    /// of memory must also hold a snapshot of it; 8 GiB natively.
    pub quota_bytes: usize,
}

/// The largest quota: what the memory can hold twice over (the data and a
/// snapshot of it).
#[cfg(target_arch = "wasm32")]
pub const MAX_QUOTA_BYTES: usize = 1 << 30;
#[cfg(not(target_arch = "wasm32"))]
pub const MAX_QUOTA_BYTES: usize = 8 << 30;

impl Default for Config {
    fn default() -> Self {
        Config {
            min_ttl: 1,
            revoke_rate: 1000,
            max_key_bytes: 4096,
            max_value_bytes: 1 << 20,
            max_keys_per_lease: 10_000,
            max_txn_ops: 128,
            history: 1000,
            quota_bytes: MAX_QUOTA_BYTES,
        }
    }
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        if self.min_ttl < 1 || self.min_ttl > MAX_LEASE_TTL {
            return Err(Error::invalid(
                "min_ttl must be between 1 and 9000000000 seconds",
            ));
        }
        if self.revoke_rate < 1 {
            return Err(Error::invalid("revoke_rate must be at least 1"));
        }
        if self.max_key_bytes < 1 || self.max_keys_per_lease < 1 {
            return Err(Error::invalid("key limits must be at least 1"));
        }
        if self.max_txn_ops < 1 {
            return Err(Error::invalid("max_txn_ops must be at least 1"));
        }
        if self.history < 1 {
            return Err(Error::invalid("history must be at least 1 revision"));
        }
        if self.quota_bytes < 1 || self.quota_bytes > MAX_QUOTA_BYTES {
            let why = Text::new("quota_bytes must be between 1 and ");
            return Err(Error::invalid(why.udec(MAX_QUOTA_BYTES as u64)));
        }
        if self.max_key_bytes > self.quota_bytes || self.max_value_bytes > self.quota_bytes {
            return Err(Error::invalid(
                "key and value limits must not exceed quota_bytes",
            ));
        }
        Ok(())
    }

    /// Refuses a key a request compares (a read's, a delete's, a compare's,
    /// a watch's): only an empty one, as etcd does. One longer than any key
    /// can be is absent, not an error.
    #[inline(never)]
    pub fn check_query_key(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Err(Error::invalid("key must not be empty"));
        }
        Ok(())
    }

    /// Refuses keys and values the limits do not allow.
    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        self.check_query_key(key)?;
        if key.len() > self.max_key_bytes {
            let why = Text::new("key is ").udec(key.len() as u64);
            let why = why
                .s(" bytes, the limit is ")
                .udec(self.max_key_bytes as u64);
            return Err(Error::invalid(why));
        }
        Ok(())
    }

    pub fn check_value(&self, value: &[u8], text: bool) -> Result<()> {
        if value.len() > self.max_value_bytes {
            let why = Text::new("value is ").udec(value.len() as u64);
            let why = why
                .s(" bytes, the limit is ")
                .udec(self.max_value_bytes as u64);
            return Err(Error::invalid(why));
        }
        if text && std::str::from_utf8(value).is_err() {
            return Err(Error::invalid("text value is not UTF-8"));
        }
        Ok(())
    }
}
