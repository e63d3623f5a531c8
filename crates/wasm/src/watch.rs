//! `RawLessor`'s watch calls: a codec watch request in, the watchers'
//! events out in one codec buffer per poll (see codec.rs).

use wasm_bindgen::prelude::*;

use crate::codec::{Reader, Writer};
use crate::error::js_error;
use crate::lessor::RawLessor;

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

    /// What the watchers have not been given, in the codec's format.
    pub fn poll_watches(&mut self) -> Vec<u8> {
        let mut w = Writer::default();
        w.watch_events(&self.inner.poll_watches());
        w.0
    }

    pub fn watches_pending(&self) -> bool {
        self.inner.watches_pending()
    }
}
