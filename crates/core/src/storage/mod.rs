//! The host's store: what the lessor hands to it ([`Batch`]), the handle the
//! lessor writes through ([`Store`]), the stored layout ([`codec`]) and its
//! reading back (`decode`, its binary records in `binary`).

mod binary;
pub mod codec;
pub(crate) mod decode;
pub(crate) mod journal;
#[cfg(test)]
mod tests;

pub use codec::{StoredLease, REVISION_KEY};

use crate::error::{Error, Result};

/// One atomic write: plain key/value puts and deletes, so any key-value
/// store can apply it. Its records are written in place as they are staged,
/// in the layout they cross to a host in ([`Batch::pack_into`]): a revoke of
/// 100k keys is 300k records, and an allocation each cost more than
/// writing them.
///
/// The layout: a u32 little-endian count of puts, each put its key and its
/// value, then a u32 count of deletes, each a key; every key and value a
/// u32 little-endian length, then its bytes. Keys are ASCII (the stored
/// layout's record names, `codec`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batch {
    put: Records,
    delete: Records,
}

/// Records in chunks: a big batch grows by a new chunk, never by copying
/// what it holds. A record is never split between chunks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Records {
    count: u32,
    chunks: Vec<Vec<u8>>,
}

/// Appends a field's bytes (`codec::push_*`).
pub type FieldWriter<'a> = &'a dyn Fn(&mut Vec<u8>);

/// A chunk this full takes no more records.
const CHUNK: usize = 64 << 10;

impl Records {
    /// Appends a record of one or two fields, each its length, then what
    /// its writer appends.
    fn push(&mut self, fields: &[FieldWriter]) {
        if self.chunks.last().is_none_or(|c| c.len() >= CHUNK) {
            // The first grows from small (most batches are a few records).
            let size = if self.chunks.is_empty() {
                0
            } else {
                CHUNK + CHUNK / 4
            };
            self.chunks.push(Vec::with_capacity(size));
        }
        let Some(out) = self.chunks.last_mut() else {
            return;
        };
        for write in fields {
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            write(out);
            let n = (out.len() - at - 4) as u32;
            out[at..at + 4].copy_from_slice(&n.to_le_bytes());
        }
        self.count += 1;
    }

    /// Every field, in order.
    fn fields(&self) -> impl Iterator<Item = &[u8]> {
        self.chunks.iter().flat_map(|c| {
            let mut bytes = &c[..];
            std::iter::from_fn(move || field(&mut bytes))
        })
    }

    fn pack_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.count.to_le_bytes());
        for c in &self.chunks {
            out.extend_from_slice(c);
        }
    }

    fn len(&self) -> usize {
        4 + self.chunks.iter().map(Vec::len).sum::<usize>()
    }
}

/// A batch read back (`Batch::unpack`): its puts, then its deletes.
pub type Unpacked<'a> = (Vec<(&'a str, &'a [u8])>, Vec<&'a str>);

/// The field at the front of `rest` (a u32 little-endian length, then its
/// bytes), taken off it; None if `rest` ends before it does.
fn field<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let (len, tail) = rest.split_first_chunk::<4>()?;
    let (f, tail) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
    *rest = tail;
    Some(f)
}

/// A record name as text (always ASCII: see `Batch`).
fn name(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.put.count == 0 && self.delete.count == 0
    }

    pub fn put(&mut self, key: &str, value: &[u8]) {
        self.put_with(&|o| o.extend_from_slice(key.as_bytes()), &|o| {
            o.extend_from_slice(value)
        });
    }

    /// A put whose key and value are appended in place (`codec::push_*`).
    pub fn put_with(&mut self, key: FieldWriter, value: FieldWriter) {
        self.put.push(&[key, value]);
    }

    pub fn delete(&mut self, key: &str) {
        self.delete_with(&|o| o.extend_from_slice(key.as_bytes()));
    }

    /// A delete whose key is appended in place.
    pub fn delete_with(&mut self, key: FieldWriter) {
        self.delete.push(&[key]);
    }

    /// The puts, in order.
    pub fn puts(&self) -> impl Iterator<Item = (&str, &[u8])> {
        let mut f = self.put.fields();
        std::iter::from_fn(move || Some((name(f.next()?), f.next()?)))
    }

    /// The deletes, in order.
    pub fn deletes(&self) -> impl Iterator<Item = &str> {
        self.delete.fields().map(name)
    }

    /// A batch in its layout (see `Batch`) read back: its puts and its
    /// deletes, or None if `packed` is not one whole batch (or has a name
    /// that is not UTF-8, which no batch writes).
    pub fn unpack(packed: &[u8]) -> Option<Unpacked<'_>> {
        fn count(rest: &mut &[u8]) -> Option<usize> {
            let (n, tail) = rest.split_first_chunk::<4>()?;
            *rest = tail;
            Some(u32::from_le_bytes(*n) as usize)
        }
        let mut rest = packed;
        // (Each record takes at least 4 bytes: a count past that is not
        // trusted for the capacity.)
        let n = count(&mut rest)?;
        let mut puts = Vec::with_capacity(n.min(rest.len() / 8));
        for _ in 0..n {
            let name = std::str::from_utf8(field(&mut rest)?).ok()?;
            puts.push((name, field(&mut rest)?));
        }
        let n = count(&mut rest)?;
        let mut deletes = Vec::with_capacity(n.min(rest.len() / 4));
        for _ in 0..n {
            deletes.push(std::str::from_utf8(field(&mut rest)?).ok()?);
        }
        rest.is_empty().then_some((puts, deletes))
    }

    /// Replaces `out` with the batch in its layout (see `Batch`).
    pub fn pack_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(self.put.len() + self.delete.len());
        self.put.pack_into(out);
        self.delete.pack_into(out);
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
