//! Snapshot and restore: a snapshot read in steps (`RawSnapshot`), stored
//! entries handed over in pieces (`RawRestore`) and the lessor rebuilt from
//! them, with the JS write callback as its storage. Entries cross packed in
//! one buffer each way (packed.rs).

use edge_lease_core::{Restore, SnapshotCursor, Storage};
use js_sys::{Function, Object};
use wasm_bindgen::prelude::*;

use crate::config::config_of;
use crate::error::js_error;
use crate::lessor::RawLessor;
use crate::packed;
use crate::storage::JsStorage;

/// A snapshot in progress (`RawLessor::snapshot_cursor`).
#[wasm_bindgen]
pub struct RawSnapshot(SnapshotCursor);

/// A restore's stored entries, handed over in pieces (`Restore`), and the
/// stored keys to leave out of pieces a store kept as they were packed (a
/// Durable Object's snapshot rows, whose later changes come after them).
#[wasm_bindgen]
#[derive(Default)]
pub struct RawRestore {
    restore: Restore,
    skip: Skipped,
}

/// The keys to leave out: sorted, found by binary search (no hash set's code
/// in the wasm), behind a filter of one bit per key's hash. Each of a
/// snapshot's entries is looked up: one hash and one bit rule out almost
/// all of them, where a binary search of ~15k journal keys (string compares
/// through long shared prefixes) was most of a Durable Object's decoding.
#[derive(Default)]
struct Skipped {
    keys: Vec<String>,
    bits: Vec<u64>,
}

impl Skipped {
    fn new(keys: Vec<String>) -> Skipped {
        // ~16 bits a key: about one entry in 16 not skipped is searched.
        let n = (keys.len() * 16).next_power_of_two().max(64);
        let mut bits = vec![0u64; n / 64];
        for k in &keys {
            let h = Skipped::hash(k) & (n as u64 - 1);
            bits[(h / 64) as usize] |= 1 << (h % 64);
        }
        Skipped { keys, bits }
    }

    /// FNV-1a: short keys, no table, and a collision only costs a search.
    fn hash(k: &str) -> u64 {
        k.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    }

    fn contains(&self, k: &str) -> bool {
        if self.keys.is_empty() {
            return false;
        }
        let h = Skipped::hash(k) & (self.bits.len() as u64 * 64 - 1);
        self.bits[(h / 64) as usize] & (1 << (h % 64)) != 0
            && self.keys.binary_search_by(|s| s.as_str().cmp(k)).is_ok()
    }
}

#[wasm_bindgen]
impl RawRestore {
    #[wasm_bindgen(constructor)]
    pub fn new() -> RawRestore {
        RawRestore::default()
    }

    /// Entries packed in one buffer by the JS half (`packEntryParts` in
    /// js/codec.js: one copy in, instead of two JS calls per entry), or as
    /// a store kept them; with `skip`, those whose key `skip_keys` named are
    /// left out.
    pub fn add(&mut self, packed: &[u8], skip: bool) -> Result<(), JsValue> {
        for (k, v) in packed::entries(packed).map_err(|e| js_error(&e))? {
            if skip && self.skip.contains(k) {
                continue;
            }
            self.restore.add(k, v).map_err(|e| js_error(&e))?;
        }
        Ok(())
    }

    /// The keys `add` leaves out when asked: an entry list's keys (values
    /// ignored), in byte order, each once.
    pub fn skip_keys(&mut self, packed: &[u8]) -> Result<(), JsValue> {
        let keys = packed::entries(packed).map_err(|e| js_error(&e))?;
        if !keys.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err(js_error(&crate::codec::bad()));
        }
        self.skip = Skipped::new(keys.into_iter().map(|(k, _)| String::from(k)).collect());
        Ok(())
    }
}

#[wasm_bindgen]
impl RawLessor {
    /// Rebuilds from the stored entries handed to `restore` (`RawRestore`);
    /// with `write`, every later change is first handed to it.
    pub fn restore(
        config: &Object,
        restore: RawRestore,
        now: f64,
        write: Option<Function>,
    ) -> Result<RawLessor, JsValue> {
        let storage = write.map(|write| Box::new(JsStorage::new(write)) as Box<dyn Storage>);
        let inner = restore
            .restore
            .finish(config_of(config), now as i64, storage)
            .map_err(|e| js_error(&e))?;
        Ok(RawLessor::wrap(inner))
    }

    /// Starts a snapshot taken in steps (`snapshot_next`) at host time `now`.
    pub fn snapshot_cursor(&self, now: f64) -> RawSnapshot {
        RawSnapshot(self.inner.snapshot_cursor(now as i64))
    }

    /// The snapshot's next entries, about `max`, packed as `restore` takes
    /// them (one copy out, not two JS objects per entry); empty once done.
    pub fn snapshot_next(&self, cursor: &mut RawSnapshot, max: u32) -> Vec<u8> {
        let mut entries = Vec::new();
        self.inner
            .snapshot_next(&mut cursor.0, max as usize, &mut entries);
        packed::pack_entries(&entries)
    }
}
