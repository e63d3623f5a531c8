//! The host's store: what the lessor hands to it ([`Batch`]), the handle the
//! lessor writes through ([`Store`]), the stored layout ([`codec`]) and its
//! reading back (`decode`).

pub mod codec;
pub(crate) mod decode;
#[cfg(test)]
mod tests;

pub use codec::{StoredLease, REVISION_KEY};

use crate::error::{Error, Result};

/// One atomic write: plain key/value puts and deletes, so any key-value
/// store can apply it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batch {
    pub put: Vec<(String, Vec<u8>)>,
    pub delete: Vec<String>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.delete.is_empty()
    }
}

/// The host's store. A write must be all-or-nothing: either the whole batch
/// is durable (or queued in order, for async stores) or an error is returned.
pub trait Storage {
    fn write(&mut self, batch: &Batch) -> std::result::Result<(), String>;
}

/// The store a lessor writes through, if it has one.
#[derive(Default)]
pub struct Store(Option<Box<dyn Storage>>);

impl Store {
    pub fn new(storage: Option<Box<dyn Storage>>) -> Store {
        Store(storage)
    }

    pub fn attached(&self) -> bool {
        self.0.is_some()
    }

    pub fn write(&mut self, batch: &Batch) -> Result<()> {
        match &mut self.0 {
            Some(s) => s.write(batch).map_err(Error::StorageFailed),
            None => Ok(()),
        }
    }
}
