//! The core's `Storage` as the JS write callback handed to
//! `RawLessor::restore`.

use edge_lease_core::{Batch, Storage};
use js_sys::{Function, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

/// Calls the binding's write function with the batch in one buffer, in the
/// layout the core keeps it in (`Batch::pack_into`; `js/codec.js` `Batch`
/// reads it, and it is the file store's journal record, appended as it
/// comes): one copy out, instead of a string, an array and a Uint8Array per
/// entry. A throw fails the operation; promises are the wrapper's business.
pub(crate) struct JsStorage {
    write: Function,
    packed: Vec<u8>,
}

impl JsStorage {
    pub(crate) fn new(write: Function) -> JsStorage {
        JsStorage {
            write,
            packed: Vec::new(),
        }
    }
}

impl Storage for JsStorage {
    fn write(&mut self, batch: &Batch) -> Result<(), String> {
        batch.pack_into(&mut self.packed);
        let bytes = Uint8Array::from(&self.packed[..]);
        self.write
            .call1(&JsValue::NULL, &bytes)
            .map(|_| ())
            .map_err(|e| match e.dyn_ref::<js_sys::Error>() {
                Some(err) => String::from(err.message()),
                None => e
                    .as_string()
                    .unwrap_or_else(|| "the storage callback threw".into()),
            })
    }
}
