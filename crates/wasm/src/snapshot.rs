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

/// A restore's stored entries, handed over in pieces (`Restore`): a
/// store's journal first, if it keeps one, then its entries.
#[wasm_bindgen]
#[derive(Default)]
pub struct RawRestore {
    restore: Restore,
}

#[wasm_bindgen]
impl RawRestore {
    #[wasm_bindgen(constructor)]
    pub fn new() -> RawRestore {
        RawRestore::default()
    }

    /// One batch of the store's journal, in the layout the lessor's writes
    /// are handed over in (`Restore::journal`): a Durable Object's rows as
    /// stored, with no JS object per entry.
    pub fn journal(&mut self, batch: &[u8]) -> Result<(), JsValue> {
        self.restore.journal(batch).map_err(|e| js_error(&e))
    }

    /// Entries packed in one buffer by the JS half (`packEntryParts` in
    /// js/codec.js: one copy in, instead of two JS calls per entry), or as
    /// a store kept them.
    pub fn add(&mut self, packed: &[u8]) -> Result<(), JsValue> {
        for (k, v) in packed::entries(packed).map_err(|e| js_error(&e))? {
            self.restore.add(k, v).map_err(|e| js_error(&e))?;
        }
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
