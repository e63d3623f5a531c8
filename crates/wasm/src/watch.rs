//! `RawLessor`'s watch calls: a codec watch request in, the watchers'
//! events out in one codec buffer per poll (see codec.rs).

use js_sys::{Function, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::codec::{Reader, Writer};
use crate::error::js_error;
use crate::lessor::RawLessor;

/// Bytes of events a poll hands out at once (`poll_watches`).
const CHUNK: usize = 1 << 20;

#[wasm_bindgen]
impl RawLessor {
    /// Starts a watcher from a codec watch request; returns its id.
    pub fn watch(&mut self, req: &[u8]) -> Result<f64, JsValue> {
        let q = Reader::whole(req, Reader::watch).map_err(|e| js_error(&e))?;
        self.inner
            .watch(&q)
            .map(|id| id as f64)
            .map_err(|e| js_error(&e))
    }

    pub fn cancel_watch(&mut self, id: f64) -> bool {
        self.inner.cancel_watch(id as i64)
    }

    pub fn pause_watch(&mut self, id: f64, paused: bool) -> bool {
        self.inner.pause_watch(id as i64, paused)
    }

    pub fn watch_caught_up(&self, id: f64) -> bool {
        self.inner.watch_caught_up(id as i64)
    }

    /// What the watchers have not been given, in the codec's format: the
    /// events, each run of about CHUNK bytes handed to `chunk` as it is
    /// made (the engine's memory keeps its highest mark, and a catch-up
    /// can be many MiB); the count and events left, then the batches,
    /// returned.
    pub fn poll_watches(&mut self, chunk: &Function) -> Result<Vec<u8>, JsValue> {
        let mut events = Writer::default();
        let mut n = 0u64;
        let mut failed = None;
        let batches = self.inner.poll_watches_into(&mut |ev| {
            events.watch_event(&ev);
            n += 1;
            if events.0.len() >= CHUNK {
                let bytes = Uint8Array::from(&events.0[..]);
                if let Err(e) = chunk.call1(&JsValue::NULL, &bytes) {
                    failed.get_or_insert(e);
                }
                events.0.clear();
                n = 0;
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        let mut w = Writer::default();
        w.u64(n);
        w.0.extend_from_slice(&events.0);
        w.watch_batches(&batches);
        Ok(w.0)
    }

    pub fn watches_pending(&self) -> bool {
        self.inner.watches_pending()
    }
}
