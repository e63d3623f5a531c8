//! A store's journal over its entries: the batches written after the
//! entries a restore reads (a Durable Object's snapshot rows), in order.
//! Each record a batch names has the state the last such batch gave it
//! (a put's value, or none for a delete), whatever the entries say: those
//! entries are left out as they come, and the puts added at the end.

use super::Batch;
use crate::error::{Error, Result};
use crate::order::sort_by;

#[derive(Default)]
pub(crate) struct Journal {
    /// Each record's state (None: deleted), in the order the batches gave
    /// them; once sealed, in name order with each name's last state only.
    /// (A sorted list, not a map: each instance of a map is kilobytes of
    /// wasm.)
    states: Vec<(String, Option<Vec<u8>>)>,
    sealed: bool,
    /// One bit per name's hash (`hash`), set for each name, once sealed.
    /// Almost every entry a restore reads is not in the journal: one hash
    /// and one bit rule it out, where a search of ~15k names with long
    /// shared prefixes (a large object's journal) cost more than decoding
    /// the entry.
    bits: Vec<u64>,
}

impl Journal {
    /// Applies one batch in the layout `Batch::pack_into` writes (its
    /// deletes, then its puts). Only before the journal is sealed.
    pub fn apply(&mut self, packed: &[u8]) -> Result<()> {
        let (puts, deletes) = Batch::unpack(packed)
            .ok_or_else(|| Error::invalid("a journal batch that is not one whole batch"))?;
        debug_assert!(!self.sealed);
        self.states
            .extend(deletes.into_iter().map(|k| (k.to_owned(), None)));
        let puts = puts
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Some(v.to_vec())));
        self.states.extend(puts);
        Ok(())
    }

    /// Whether the journal names the record (its state comes from here).
    /// Seals the journal.
    pub fn names(&mut self, name: &str) -> bool {
        self.seal();
        if self.states.is_empty() {
            return false;
        }
        let h = hash(name) & (self.bits.len() as u64 * 64 - 1);
        self.bits[(h / 64) as usize] & (1 << (h % 64)) != 0
            && self
                .states
                .binary_search_by(|(k, _)| k.as_str().cmp(name))
                .is_ok()
    }

    /// The records the journal puts, with their last values, in name order.
    pub fn into_puts(mut self) -> impl Iterator<Item = (String, Vec<u8>)> {
        self.seal();
        self.states.into_iter().filter_map(|(k, v)| Some((k, v?)))
    }

    fn seal(&mut self) {
        if self.sealed {
            return;
        }
        self.sealed = true;
        // Stable: each name's states stay in the order given, and the last
        // of them takes the place of the first.
        sort_by(&mut self.states, |a, b| a.0.cmp(&b.0));
        self.states.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            same
        });
        // ~16 bits a name: about one entry in 16 that is not named is
        // searched for.
        let n = (self.states.len() * 16).next_power_of_two().max(64);
        self.bits = vec![0; n / 64];
        for (k, _) in &self.states {
            let h = hash(k) & (n as u64 - 1);
            self.bits[(h / 64) as usize] |= 1 << (h % 64);
        }
    }
}

/// foldhash over the name's bytes (the code that hashes keys): 8 bytes
/// at a step, where FNV-1a took one, for every entry a restore reads. A
/// fixed seed: a collision only costs a search.
fn hash(name: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0).hash_one(name.as_bytes())
}
