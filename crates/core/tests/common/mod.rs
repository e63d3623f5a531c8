//! What several integration tests share.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use edge_lease_core::{Batch, Storage};

/// A store that applies each batch whole (deletes, then puts).
#[derive(Clone, Default)]
pub struct MemStore(pub Rc<RefCell<BTreeMap<String, Vec<u8>>>>);

impl Storage for MemStore {
    fn write(&mut self, batch: &Batch) -> Result<(), String> {
        let mut m = self.0.borrow_mut();
        for k in batch.deletes() {
            m.remove(k);
        }
        for (k, v) in batch.puts() {
            m.insert(k.to_string(), v.to_vec());
        }
        Ok(())
    }
}

impl MemStore {
    /// What it holds, in key order.
    #[allow(dead_code)] // (not every test that shares the store reads it whole)
    pub fn entries(&self) -> Vec<(String, Vec<u8>)> {
        self.0
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
