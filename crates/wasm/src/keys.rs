//! `RawLessor`'s key calls of the wrapper's own API: put, get, delete,
//! range. Entries cross in the scratch slots, values read in place from wasm
//! memory; put returns NaN on error, kept for `take_error`.

use edge_lease_core::{Entry, Error, PutOptions, PutResult};
use js_sys::Array;
use wasm_bindgen::prelude::*;

use crate::convert::{id_of, ms};
use crate::error::js_error;
use crate::layout::{entry_slots, range_row, Slot, SLOTS};
use crate::lessor::{RawLessor, INBOX};

/// A put's options as the three put calls take them.
fn put_options(
    lease_hi: u32,
    lease_lo: u32,
    if_absent: bool,
    text: bool,
    prev: bool,
) -> PutOptions {
    PutOptions {
        lease: id_of(lease_hi, lease_lo),
        if_absent,
        text,
        prev,
        ..PutOptions::default()
    }
}

/// A get's entry shown in the entry slots; whether there was one.
fn shown(scratch: &mut [f64; SLOTS], found: Option<&Entry>) -> bool {
    found.map(|e| entry_slots(scratch, e)).is_some()
}

#[wasm_bindgen]
impl RawLessor {
    /// Returns the revision, NaN on error; sets `Slot::Created`, and
    /// `Slot::HasPrev` with the entry slots: the previous entry when `prev`
    /// asks for it, and always the holder when an if-absent put is refused.
    #[allow(clippy::too_many_arguments)]
    pub fn put_str(
        &mut self,
        now: f64,
        key: &str,
        value: &str,
        lease_hi: u32,
        lease_lo: u32,
        if_absent: bool,
        prev: bool,
    ) -> f64 {
        let opts = put_options(lease_hi, lease_lo, if_absent, true, prev);
        self.put(now, key, value.as_bytes(), opts)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn put_bytes(
        &mut self,
        now: f64,
        key: &str,
        value: &[u8],
        lease_hi: u32,
        lease_lo: u32,
        if_absent: bool,
        prev: bool,
    ) -> f64 {
        let opts = put_options(lease_hi, lease_lo, if_absent, false, prev);
        self.put(now, key, value, opts)
    }

    /// `put_str` of the key and value the wrapper wrote in the inbox:
    /// `key_len` bytes, then `value_len`.
    #[allow(clippy::too_many_arguments)]
    pub fn put_in(
        &mut self,
        now: f64,
        key_len: u32,
        value_len: u32,
        lease_hi: u32,
        lease_lo: u32,
        if_absent: bool,
        prev: bool,
    ) -> f64 {
        let (k, v) = (key_len as usize, value_len as usize);
        if k.saturating_add(v) > INBOX {
            return self.fail(Error::invalid("a key and value past the inbox"));
        }
        let opts = put_options(lease_hi, lease_lo, if_absent, true, prev);
        let r = self
            .inner
            .put(ms(now), &self.inbox[..k], &self.inbox[k..k + v], opts);
        self.put_done(r)
    }

    fn put(&mut self, now: f64, key: &str, value: &[u8], opts: PutOptions) -> f64 {
        let r = self.inner.put(ms(now), key.as_bytes(), value, opts);
        self.put_done(r)
    }

    fn put_done(&mut self, r: edge_lease_core::Result<PutResult>) -> f64 {
        match r {
            Ok(r) => {
                self.set(Slot::Created, r.created as u8 as f64);
                self.show_prev(r.prev);
                r.revision as f64
            }
            Err(e) => self.fail(e),
        }
    }

    /// Keeps a put's or delete's previous entry and shows it in the entry slots.
    fn show_prev(&mut self, prev: Option<Entry>) {
        self.prev = prev;
        self.set(Slot::HasPrev, self.prev.is_some() as u8 as f64);
        if let Some(e) = &self.prev {
            entry_slots(&mut self.scratch, e);
        }
    }

    /// Whether the key is live; if so the entry slots are set. The wrapper
    /// reads the value straight from wasm memory before its next call:
    /// decoding short values itself is several times faster than a returned
    /// string (TextDecoder), and bytes are copied only once.
    pub fn get(&mut self, now: f64, key: &str) -> bool {
        shown(&mut self.scratch, self.inner.get(ms(now), key.as_bytes()))
    }

    /// `get` of the key the wrapper wrote in the inbox (`key_len` bytes;
    /// past the inbox, no key is there).
    pub fn get_in(&mut self, now: f64, key_len: u32) -> bool {
        match self.inbox.get(..key_len as usize) {
            Some(key) => shown(&mut self.scratch, self.inner.get(ms(now), key)),
            None => false,
        }
    }

    /// Live entries under `prefix`, sorted, one `RangeRow` array each.
    pub fn range(&mut self, now: f64, prefix: &str) -> Array {
        let now = ms(now);
        self.inner
            .range(now, prefix.as_bytes())
            .into_iter()
            .map(|(k, e)| range_row(k, e))
            .collect()
    }

    /// Returns the revision; sets `Slot::Deleted`, and `Slot::HasPrev` with
    /// the entry slots: the deleted entry (its lease is the delete event's).
    pub fn delete(&mut self, now: f64, key: &str) -> Result<f64, JsValue> {
        let now = ms(now);
        let r = self
            .inner
            .delete(now, key.as_bytes(), true)
            .map_err(|e| js_error(&e))?;
        self.set(Slot::Deleted, r.deleted as u8 as f64);
        self.show_prev(r.prev);
        Ok(r.revision as f64)
    }

    pub fn revision(&self) -> f64 {
        self.inner.revision() as f64
    }

    /// Keys held (those of leases past their deadline until `tick` included).
    pub fn key_count(&self) -> f64 {
        self.inner.key_count() as f64
    }
}
