//! Core errors as JS `Error`s: the message, `code` (`Error::code`), and
//! `entry` (a corrupt entry's key) or `compactRevision` when the error has
//! one.

use edge_lease_core::Error;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

pub(crate) fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.message());
    let _ = Reflect::set(&err, &"code".into(), &e.code().into());
    if let Error::CorruptEntry { key, .. } = e {
        let _ = Reflect::set(&err, &"entry".into(), &key.as_str().into());
    }
    if let Error::Compacted(rev) = e {
        let _ = Reflect::set(&err, &"compactRevision".into(), &(*rev as f64).into());
    }
    err.into()
}
