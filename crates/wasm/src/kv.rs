//! `RawLessor`'s etcd-shaped KV calls: range, put, delete and txn requests
//! in one byte buffer each way (see codec.rs), and the store state beside
//! them (compaction, size, counts, host entries).

use edge_lease_core::{Op, OpResponse};
use js_sys::Float64Array;
use wasm_bindgen::prelude::*;

use crate::codec::{Reader, Writer};
use crate::convert::ms;
use crate::error::js_error;
use crate::lessor::RawLessor;

#[wasm_bindgen]
impl RawLessor {
    /// etcd's Range, Put, DeleteRange or Txn: a codec request, its kind
    /// first (0 range, 1 put, 2 delete, 3 txn, as a transaction's ops), in;
    /// the codec response of that kind out. (One export for the four: each
    /// export is its own glue.)
    pub fn kv(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let op = Reader::whole(req, Reader::op).map_err(|e| js_error(&e))?;
        let now = ms(now);
        let l = &mut self.inner;
        let resp = match &op {
            Op::Range(q) => l.range_kv(now, q).map(OpResponse::Range),
            Op::Put(p) => l.put_kv(now, p).map(OpResponse::Put),
            Op::Delete(d) => l.delete_range(now, d).map(OpResponse::Delete),
            Op::Txn(t) => l.txn(now, t).map(OpResponse::Txn),
        }
        .map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.response(&op, &resp);
        Ok(w.0)
    }

    /// The counts etcd's metrics keep, in `Counts::fields`'s order.
    pub fn counts(&self) -> Float64Array {
        Float64Array::from(&self.inner.counts().fields().map(|n| n as f64)[..])
    }

    /// Returns the current revision.
    pub fn compact(&mut self, revision: f64) -> Result<f64, JsValue> {
        self.inner
            .compact(revision as i64)
            .map(|r| r as f64)
            .map_err(|e| js_error(&e))
    }

    /// One step of the compaction's sweep, of about `max` versions;
    /// returns how many changes are left to visit.
    pub fn compact_step(&mut self, max: u32) -> Result<f64, JsValue> {
        self.inner
            .compact_step(max as usize)
            .map(|n| n as f64)
            .map_err(|e| js_error(&e))
    }

    /// Changes the compaction's sweep has yet to visit.
    pub fn compaction_pending(&self) -> f64 {
        self.inner.compaction_pending() as f64
    }

    /// Bytes of keys, values and history, as the quota counts them.
    pub fn size_bytes(&self) -> f64 {
        self.inner.size_bytes() as f64
    }

    /// The host entry `name` (a copy), or undefined.
    pub fn host_entry(&self, name: &str) -> Option<Vec<u8>> {
        self.inner.host_entry(name).map(<[u8]>::to_vec)
    }

    /// Sets (bytes) or removes (undefined) the host entry `name`.
    pub fn set_host_entry(&mut self, name: &str, value: Option<Vec<u8>>) -> Result<(), JsValue> {
        self.inner
            .set_host_entry(name, value.as_deref())
            .map_err(|e| js_error(&e))
    }

    /// The compaction point.
    pub fn compacted(&self) -> f64 {
        self.inner.compacted() as f64
    }
}
