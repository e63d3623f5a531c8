//! `RawLessor`, the class JS holds: the core's lessor, the scratch array the
//! wrapper reads between calls, and the error a hot path kept for
//! `take_error`. Its other calls are in `leases`, `keys`, `kv`, `watch`,
//! `snapshot` and `etcd`.

use edge_lease_core::{Entry, Error, Lessor};
use js_sys::{Float64Array, Object, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::config::config_of;
use crate::error::js_error;
use crate::layout::{Slot, SLOTS};

#[wasm_bindgen]
pub struct RawLessor {
    pub(crate) inner: Lessor,
    pub(crate) scratch: Box<[f64; SLOTS]>,
    /// The error of the last failed hot-path call or tick.
    pub(crate) error: Option<Error>,
    pub(crate) keys_out: String,
    /// The previous entry of the last put or delete, whose value the
    /// wrapper reads in place (see `Slot::ValuePtr`).
    pub(crate) prev: Option<Entry>,
    /// Where the wrapper writes a get's key, or a put's key and value,
    /// before a call that reads them here (`get_in`, `put_in`): a string
    /// argument costs an allocation in wasm, a copy and a free per call.
    pub(crate) inbox: Box<[u8; INBOX]>,
}

/// The inbox's size: ASCII keys and values that fit together take it.
pub const INBOX: usize = 1024;

#[wasm_bindgen]
impl RawLessor {
    /// A lessor with the options of `defaults()`'s shape.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &Object) -> Result<RawLessor, JsValue> {
        let inner = Lessor::new(config_of(config)).map_err(|e| js_error(&e))?;
        Ok(RawLessor::wrap(inner))
    }

    /// A view of the scratch array. It lives in wasm memory: when memory
    /// grows the view empties and the caller asks again.
    pub fn scratch(&self) -> Float64Array {
        // SAFETY: the boxed array never moves while self lives, and the view
        // is only read by the wrapper between calls into this object.
        unsafe { Float64Array::view(&self.scratch[..]) }
    }

    /// A view of the inbox, which the wrapper writes before `get_in` and
    /// `put_in`. Like `scratch`, it empties when memory grows.
    pub fn inbox(&self) -> Uint8Array {
        // SAFETY: as `scratch`: the boxed array never moves while self
        // lives, and the wrapper only writes it between calls.
        unsafe { Uint8Array::view(&self.inbox[..]) }
    }

    /// Bytes of wasm linear memory (for benchmarks).
    pub fn memory_bytes() -> f64 {
        pages_to_bytes(core::arch::wasm32::memory_size(0))
    }

    /// The module's `WebAssembly.Memory`, for reading values in place.
    pub fn memory() -> JsValue {
        wasm_bindgen::memory()
    }

    /// The error behind the last NaN (or a failed `tick`), or undefined.
    pub fn take_error(&mut self) -> JsValue {
        match self.error.take() {
            Some(e) => js_error(&e),
            None => JsValue::UNDEFINED,
        }
    }
}

impl RawLessor {
    pub(crate) fn wrap(inner: Lessor) -> RawLessor {
        RawLessor {
            inner,
            scratch: Box::new([0.0; SLOTS]),
            error: None,
            keys_out: String::new(),
            prev: None,
            inbox: Box::new([0; INBOX]),
        }
    }

    pub(crate) fn set(&mut self, slot: Slot, v: f64) {
        self.scratch[slot as usize] = v;
    }

    /// Keeps a hot path's error for `take_error` and returns NaN: a
    /// `Result` return crosses to JS as a freshly allocated array on every
    /// call, successful or not.
    pub(crate) fn fail(&mut self, e: Error) -> f64 {
        self.error = Some(e);
        f64::NAN
    }
}

/// Bytes of `pages` wasm pages, in f64: 65536 pages (4 GiB) overflow a
/// 32-bit usize, which read 0.
pub fn pages_to_bytes(pages: usize) -> f64 {
    pages as f64 * 65536.0
}
