//! `RawLessor`'s etcd-shaped KV calls: range, put, delete and txn requests
//! in one byte buffer each way (see codec.rs), and the store state beside
//! them (compaction, size, counts, host entries).

use js_sys::Float64Array;
use wasm_bindgen::prelude::*;

use crate::codec::{Reader, Writer};
use crate::convert::ms;
use crate::error::js_error;
use crate::lessor::RawLessor;

#[wasm_bindgen]
impl RawLessor {
    /// Range: a codec range request in, a codec range response out.
    pub fn range_kv(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let q = Reader::whole(req, Reader::range).map_err(|e| js_error(&e))?;
        let resp = self.inner.range_kv(ms(now), &q).map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.range(&resp);
        Ok(w.0)
    }

    /// etcd's Put: a codec put request in, a codec put response out.
    pub fn put_kv(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let p = Reader::whole(req, Reader::put).map_err(|e| js_error(&e))?;
        let resp = self.inner.put_kv(ms(now), &p).map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.put(&p.key, &resp);
        Ok(w.0)
    }

    /// The counts etcd's metrics keep, in `Counts::fields`'s order.
    pub fn counts(&self) -> Float64Array {
        Float64Array::from(&self.inner.counts().fields().map(|n| n as f64)[..])
    }

    pub fn delete_range(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let d = Reader::whole(req, Reader::delete).map_err(|e| js_error(&e))?;
        let resp = self
            .inner
            .delete_range(ms(now), &d)
            .map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.delete(&resp);
        Ok(w.0)
    }

    pub fn txn(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let t = Reader::whole(req, Reader::txn).map_err(|e| js_error(&e))?;
        let resp = self.inner.txn(ms(now), &t).map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.txn(&t, &resp);
        Ok(w.0)
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
