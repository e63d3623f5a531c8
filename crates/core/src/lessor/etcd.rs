//! What only an etcd server needs of the history (feature `etcd`): etcd's
//! HashKV, and the key bucket in etcd's backend layout for its snapshot
//! file (`kv/backend.rs`, `kv/hash.rs`).

use crate::error::{Error, Result};
use crate::kv::KeyBucketCursor;
use crate::lessor::Lessor;

impl Lessor {
    /// etcd's HashKV of the history up to revision `upto` (0: the current
    /// one): the same writes hash the same here and on etcd 3.4. Refuses,
    /// as etcd, a revision at or before the compaction point or in the
    /// future; a negative one hashes no version.
    pub fn hash_kv(&self, upto: i64) -> Result<u32> {
        if upto > 0 && upto <= self.kv.compacted() {
            return Err(Error::Compacted(self.kv.compacted()));
        }
        if upto > self.kv.revision() {
            return Err(Error::FutureRevision);
        }
        Ok(self
            .kv
            .hash_kv(if upto == 0 { self.kv.revision() } else { upto }))
    }

    /// The history as etcd 3.4's backend holds it in its key bucket, for a
    /// snapshot file etcd can restore: `u32 LE length, key, u32 LE length,
    /// value` per record, in revision order (`kv/backend.rs`).
    pub fn etcd_key_bucket(&self) -> Vec<u8> {
        self.kv.etcd_key_bucket()
    }

    /// Starts reading the key bucket in pieces (`etcd_key_bucket_next`), for
    /// a history too large to copy whole; its records' heads come with it
    /// (`KeyBucketCursor::take_heads`).
    pub fn etcd_key_bucket_cursor(&self) -> KeyBucketCursor {
        self.kv.key_bucket_cursor()
    }

    /// The key bucket's next records, about `max` bytes (at least one),
    /// packed as `etcd_key_bucket` packs them; empty once done. Fails with
    /// `Compacted` if a compaction since the cursor began dropped one.
    pub fn etcd_key_bucket_next(
        &self,
        cursor: &mut KeyBucketCursor,
        max: usize,
    ) -> Result<Vec<u8>> {
        self.kv.key_bucket_next(cursor, max)
    }
}
