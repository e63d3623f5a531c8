//! What only an etcd server needs (feature `etcd`): HashKV, and etcd's key
//! bucket read in pieces (`RawKeyBucket`).

use edge_lease_core::KeyBucketCursor;
use wasm_bindgen::prelude::*;

use crate::error::js_error;
use crate::lessor::RawLessor;

#[wasm_bindgen]
impl RawLessor {
    /// etcd's HashKV up to `upto` (0: the current revision).
    pub fn hash_kv(&self, upto: f64) -> Result<u32, JsValue> {
        self.inner.hash_kv(upto as i64).map_err(|e| js_error(&e))
    }

    /// etcd's key bucket for this history, read in pieces
    /// (`Lessor::etcd_key_bucket_cursor`).
    pub fn etcd_key_bucket_cursor(&self) -> RawKeyBucket {
        RawKeyBucket(self.inner.etcd_key_bucket_cursor())
    }

    /// The key bucket's next records, about `max` bytes; empty once done.
    pub fn etcd_key_bucket_next(
        &self,
        cursor: &mut RawKeyBucket,
        max: u32,
    ) -> Result<Vec<u8>, JsValue> {
        self.inner
            .etcd_key_bucket_next(&mut cursor.0, max as usize)
            .map_err(|e| js_error(&e))
    }
}

/// The key bucket read in pieces (`RawLessor::etcd_key_bucket_cursor`).
#[wasm_bindgen]
pub struct RawKeyBucket(KeyBucketCursor);

#[wasm_bindgen]
impl RawKeyBucket {
    /// Each record's key and value length (`KeyBucketCursor::take_heads`).
    pub fn take_heads(&mut self) -> Vec<u8> {
        self.0.take_heads()
    }
}
