//! The positions JS reads by name, exported as enums: the slots of the
//! scratch array, and the fields of the rows of `range`, `revoke` and
//! `tick`; and the functions that fill them.

use edge_lease_core::{Entry, Revoked};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::convert::{hi, key_str, lo, value_js};

/// Positions in the scratch array (see `RawLessor::scratch`).
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum Slot {
    /// A lease id's halves: grant's new id, or an entry's lease (0, 0: none).
    IdHi = 0,
    IdLo = 1,
    /// An entry: of `get`, or the previous one of `put` and `delete`.
    CreateRevision = 2,
    ModRevision = 3,
    Version = 4,
    /// The entry's value in wasm memory, readable until the next call into
    /// this object, and 1 if it was written as text.
    ValuePtr = 5,
    ValueLen = 6,
    Text = 7,
    /// put: 1 if the key was created (for an if-absent put: written).
    Created = 8,
    /// delete: 1 if a key was deleted.
    Deleted = 9,
    /// put, delete: 1 if the entry slots hold the previous entry.
    HasPrev = 10,
    /// time_to_live: remaining whole seconds, remaining ms, granted TTL.
    Ttl = 11,
    TtlMs = 12,
    GrantedTtl = 13,
}

pub(crate) const SLOTS: usize = Slot::GrantedTtl as usize + 1;

/// One revoked or expired lease in the flat rows of `revoke` and `tick`:
/// these fields, then `KeyCount` key lengths from `KeyLengths` on.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum RevokedRow {
    IdHi = 0,
    IdLo = 1,
    Revision = 2,
    KeyCount = 3,
    KeyLengths = 4,
}

/// One row of `range`.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum RangeRow {
    Key = 0,
    Value = 1,
    CreateRevision = 2,
    ModRevision = 3,
    Version = 4,
    LeaseHi = 5,
    LeaseLo = 6,
}

/// Sets the entry slots of `scratch` (a free function: the entry may be
/// borrowed from the same `RawLessor`).
pub(crate) fn entry_slots(scratch: &mut [f64; SLOTS], e: &Entry) {
    scratch[Slot::CreateRevision as usize] = e.create_revision as f64;
    scratch[Slot::ModRevision as usize] = e.mod_revision as f64;
    scratch[Slot::Version as usize] = e.version as f64;
    scratch[Slot::IdHi as usize] = hi(e.lease);
    scratch[Slot::IdLo as usize] = lo(e.lease);
    scratch[Slot::ValuePtr as usize] = e.value.as_ptr() as usize as f64;
    scratch[Slot::ValueLen as usize] = e.value.len() as f64;
    scratch[Slot::Text as usize] = e.text as u8 as f64;
}

/// The `RangeRow` array of one entry of `range`.
pub(crate) fn range_row(k: &[u8], e: &Entry) -> Array {
    let row = Array::new_with_length(RangeRow::LeaseLo as u32 + 1);
    let set = |f: RangeRow, v: JsValue| row.set(f as u32, v);
    set(RangeRow::Key, key_str(k));
    set(RangeRow::Value, value_js(e));
    set(RangeRow::CreateRevision, (e.create_revision as f64).into());
    set(RangeRow::ModRevision, (e.mod_revision as f64).into());
    set(RangeRow::Version, (e.version as f64).into());
    set(RangeRow::LeaseHi, hi(e.lease).into());
    set(RangeRow::LeaseLo, lo(e.lease).into());
    row
}

/// Appends revoked or expired leases as `[hi, lo, revision, key count, key
/// lengths...]` to `meta` and their keys to `keys`, so that any number of
/// them cross to JS as one Float64Array and one string (two calls, instead
/// of an array and a string per lease).
pub(crate) fn revoked_flat(list: &[Revoked], meta: &mut Vec<f64>, keys: &mut String) {
    for r in list {
        let mut head = [0.0; RevokedRow::KeyLengths as usize];
        head[RevokedRow::IdHi as usize] = hi(r.id);
        head[RevokedRow::IdLo as usize] = lo(r.id);
        head[RevokedRow::Revision as usize] = r.revision as f64;
        head[RevokedRow::KeyCount as usize] = r.keys.len() as f64;
        meta.extend_from_slice(&head);
        for k in &r.keys {
            let k = String::from_utf8_lossy(k);
            // JS slices by UTF-16 code units.
            meta.push(k.encode_utf16().count() as f64);
            keys.push_str(&k);
        }
    }
}
