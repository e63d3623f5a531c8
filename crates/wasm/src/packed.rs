//! Stored entries and storage batches as they cross in one buffer: each
//! key and value a u32 little-endian length, then the bytes (`js/codec.js`
//! reads and writes the same layout). Unlike codec.rs's requests, no varints.

use edge_lease_core::{Batch, Result};

use crate::codec::bad;

/// Stored entries as packed by `packEntryParts` (key, value; each a u32
/// little-endian length, then the bytes), borrowed from the buffer.
pub fn entries(packed: &[u8]) -> Result<Vec<(&str, &[u8])>> {
    fn next<'a>(rest: &mut &'a [u8]) -> Result<&'a [u8]> {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
        let n = u32::from_le_bytes(*len) as usize;
        if n > tail.len() {
            return Err(bad());
        }
        let (v, tail) = tail.split_at(n);
        *rest = tail;
        Ok(v)
    }
    let mut rest = packed;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let key = std::str::from_utf8(next(&mut rest)?).map_err(|_| bad())?;
        out.push((key, next(&mut rest)?));
    }
    Ok(out)
}

/// Entries packed as `entries` reads them.
pub fn pack_entries(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let size = entries.iter().map(|(k, v)| 8 + k.len() + v.len()).sum();
    let mut out = Vec::with_capacity(size);
    for (k, v) in entries {
        for part in [k.as_bytes(), &v[..]] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

/// A storage batch as it crosses to the store: a u32 little-endian count of
/// puts, each put packed as `pack_entries` packs an entry, then a u32 count
/// of deletes, each a u32 length and the key. It is the file store's journal
/// record, so that store appends it as it comes (`js/codec.js` `Batch` reads
/// it for the others). `out` is cleared first and reused between writes.
pub fn pack_batch(batch: &Batch, out: &mut Vec<u8>) {
    fn part(out: &mut Vec<u8>, b: &[u8]) {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    }
    out.clear();
    let put: usize = batch.put.iter().map(|(k, v)| 8 + k.len() + v.len()).sum();
    let delete: usize = batch.delete.iter().map(|k| 4 + k.len()).sum();
    out.reserve(8 + put + delete);
    out.extend_from_slice(&(batch.put.len() as u32).to_le_bytes());
    for (k, v) in &batch.put {
        part(out, k.as_bytes());
        part(out, v);
    }
    out.extend_from_slice(&(batch.delete.len() as u32).to_le_bytes());
    for k in &batch.delete {
        part(out, k.as_bytes());
    }
}
