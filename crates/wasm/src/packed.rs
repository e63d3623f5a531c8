//! Stored entries as they cross in one buffer: each key and value a u32
//! little-endian length, then the bytes (`js/codec.js` reads and writes the
//! same layout, and a storage batch's records are laid out so too:
//! `edge_lease_core::Batch`). Unlike codec.rs's requests, no varints.

use edge_lease_core::Result;

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
