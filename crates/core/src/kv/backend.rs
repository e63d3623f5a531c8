//! The history in etcd 3.4's backend layout: the records of its key bucket,
//! which its HashKV hashes and its snapshot file holds. Each version is one
//! record: the key is the revision (8 bytes big-endian, "_", the
//! sub-revision the same way, "t" after a deletion's) and the value the
//! version's mvccpb.KeyValue as gogoproto marshals it (fields in number
//! order, zero ones left out; a deletion's holds the key alone).

use super::{Entry, Key, Keyspace};
use crate::error::{Error, Result};

/// Appends protobuf field `field` as a varint (left out when 0).
fn varint(out: &mut Vec<u8>, field: u8, v: i64) {
    if v != 0 {
        out.push(field << 3);
        uvarint(out, v as u64);
    }
}

/// Appends protobuf field `field` as bytes (left out when empty).
fn bytes(out: &mut Vec<u8>, field: u8, b: &[u8]) {
    if !b.is_empty() {
        out.push(field << 3 | 2);
        uvarint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

/// Bytes `uvarint` writes for `v`.
fn uvarint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a version's backend key (its revision) to `out`.
pub(crate) fn record_key(out: &mut Vec<u8>, rev: i64, sub: u32, deleted: bool) {
    out.extend_from_slice(&rev.to_be_bytes());
    out.push(b'_');
    out.extend_from_slice(&(sub as i64).to_be_bytes());
    if deleted {
        out.push(b't');
    }
}

/// Appends a version's backend value (its mvccpb.KeyValue) to `out`.
pub(crate) fn record_value(out: &mut Vec<u8>, key: &[u8], e: Option<&Entry>) {
    bytes(out, 1, key);
    if let Some(e) = e {
        varint(out, 2, e.create_revision);
        varint(out, 3, e.mod_revision);
        varint(out, 4, e.version);
        bytes(out, 5, &e.value);
        varint(out, 6, e.lease);
    }
}

/// Bytes `record_value` appends: so a bucket is allocated once, whole.
pub(crate) fn record_value_len(key: &[u8], e: Option<&Entry>) -> usize {
    let bytes = |b: &[u8]| {
        if b.is_empty() {
            0
        } else {
            1 + uvarint_len(b.len() as u64) + b.len()
        }
    };
    let varint = |v: i64| if v == 0 { 0 } else { 1 + uvarint_len(v as u64) };
    bytes(key)
        + e.map_or(0, |e| {
            varint(e.create_revision)
                + varint(e.mod_revision)
                + varint(e.version)
                + bytes(&e.value)
                + varint(e.lease)
        })
}

/// Where a read of the key bucket in pieces is (`Keyspace::key_bucket_cursor`):
/// the records' order, taken when it starts, and how many are read.
pub struct KeyBucketCursor {
    order: Vec<(i64, u32, Key)>,
    at: usize,
    heads: Vec<u8>,
}

impl KeyBucketCursor {
    /// Each record's key and its value's length, in order, packed as `u32
    /// LE length, key, u32 LE value length` (the values left out), so that a
    /// host can lay the records out before it reads them; taken once.
    pub fn take_heads(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.heads)
    }
}

/// A version's backend record length, key and value with their u32s.
fn record_len(key: &[u8], e: Option<&Entry>) -> usize {
    8 + 17 + e.is_none() as usize + record_value_len(key, e)
}

/// Appends a record's head: u32 LE length, its backend key, u32 LE length
/// of its value (the value itself follows in a record, not in the heads).
fn record_head(out: &mut Vec<u8>, rev: i64, sub: u32, key: &[u8], e: Option<&Entry>) {
    out.extend_from_slice(&(17 + e.is_none() as u32).to_le_bytes());
    record_key(out, rev, sub, e.is_none());
    out.extend_from_slice(&(record_value_len(key, e) as u32).to_le_bytes());
}

impl Keyspace {
    /// The key bucket etcd's backend would hold for this history (the
    /// versions held: see `versions`), in its order (revision, then
    /// sub-revision), packed as `u32 LE length, key, u32 LE length, value`
    /// per record: one copy of the whole history.
    pub fn etcd_key_bucket(&self) -> Vec<u8> {
        let mut c = self.key_bucket_cursor();
        self.key_bucket_next(&mut c, usize::MAX)
            .expect("the keyspace did not change since the cursor began")
    }

    /// Starts reading the key bucket (`etcd_key_bucket`) in pieces
    /// (`key_bucket_next`), so that a large history is never copied whole.
    pub fn key_bucket_cursor(&self) -> KeyBucketCursor {
        let versions = self.versions(self.revision());
        let mut heads = Vec::with_capacity(
            versions
                .iter()
                .map(|&(.., e)| 8 + 17 + e.is_none() as usize)
                .sum(),
        );
        let mut order = Vec::with_capacity(versions.len());
        for (rev, sub, k, e) in versions {
            record_head(&mut heads, rev, sub, k, e);
            order.push((rev, sub, k.clone()));
        }
        KeyBucketCursor {
            order,
            at: 0,
            heads,
        }
    }

    /// The next records of the key bucket, packed as `etcd_key_bucket`
    /// packs them: about `max` bytes, at least one record; empty once done.
    /// The keyspace may change between pieces (a record is read as its
    /// version is, and versions do not change); a compaction that drops a
    /// version not yet read fails the read with `Compacted`.
    pub fn key_bucket_next(&self, c: &mut KeyBucketCursor, max: usize) -> Result<Vec<u8>> {
        // (The piece's versions found and sized first, so that it is
        // allocated once, whole.)
        let mut size = 0;
        let mut piece = Vec::new();
        for (rev, sub, key) in &c.order[c.at..] {
            let e = self
                .version(key, *rev, *sub)
                .ok_or(Error::Compacted(self.compacted))?;
            let n = record_len(key, e);
            if !piece.is_empty() && size + n > max {
                break;
            }
            size += n;
            piece.push((*rev, *sub, &**key, e));
        }
        let mut out = Vec::with_capacity(size);
        for &(rev, sub, key, e) in &piece {
            record_head(&mut out, rev, sub, key, e);
            record_value(&mut out, key, e);
        }
        debug_assert_eq!(out.len(), size);
        c.at += piece.len();
        if c.at == c.order.len() {
            // (Done: the keys it held go.)
            c.order = Vec::new();
            c.at = 0;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_value_len_is_what_record_value_writes() {
        let mut out = Vec::new();
        for key in [&b""[..], b"k", &[7u8; 200], &[1u8; 20000]] {
            for n in [0i64, 1, 127, 128, 16383, 16384, i64::MAX, -1] {
                for value in [&b""[..], b"v", &[9u8; 300]] {
                    let e = Entry {
                        value: value.into(),
                        text: false,
                        create_revision: n,
                        mod_revision: n.wrapping_add(1),
                        version: n / 3,
                        sub: 0,
                        lease: n / 7,
                    };
                    for e in [None, Some(&e)] {
                        out.clear();
                        record_value(&mut out, key, e);
                        assert_eq!(record_value_len(key, e), out.len());
                    }
                }
            }
        }
    }
}
