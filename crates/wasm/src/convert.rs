//! Values as they cross: host time, lease ids as two u32 halves, keys and
//! values as JS values.

use edge_lease_core::{Entry, Key, LeaseId};
use js_sys::{Array, Uint8Array};
use wasm_bindgen::JsValue;

/// Host time: the wrapper has already checked it is a finite number.
pub(crate) fn ms(now: f64) -> i64 {
    now as i64
}

pub(crate) fn id_of(hi: u32, lo: u32) -> LeaseId {
    (((hi as u64) << 32) | lo as u64) as i64
}

pub(crate) fn hi(id: LeaseId) -> f64 {
    ((id as u64) >> 32) as f64
}

pub(crate) fn lo(id: LeaseId) -> f64 {
    (id as u64 & 0xffff_ffff) as f64
}

pub(crate) fn key_str(k: &[u8]) -> JsValue {
    // Keys only ever arrive from JS as strings, so they are UTF-8.
    JsValue::from_str(&String::from_utf8_lossy(k))
}

pub(crate) fn value_js(e: &Entry) -> JsValue {
    if e.text {
        JsValue::from_str(std::str::from_utf8(&e.value).unwrap_or_default())
    } else {
        Uint8Array::from(&e.value[..]).into()
    }
}

pub(crate) fn keys_js(keys: &[Key]) -> Array {
    keys.iter().map(|k| key_str(k)).collect()
}
