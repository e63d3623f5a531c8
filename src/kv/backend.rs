//! The history in etcd 3.4's backend layout: the records of its key bucket,
//! which its HashKV hashes and its snapshot file holds. Each version is one
//! record: the key is the revision (8 bytes big-endian, "_", the
//! sub-revision the same way, "t" after a deletion's) and the value the
//! version's mvccpb.KeyValue as gogoproto marshals it (fields in number
//! order, zero ones left out; a deletion's holds the key alone).

use super::{Entry, Keyspace};

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

impl Keyspace {
    /// The key bucket etcd's backend would hold for this history (the
    /// versions held: see `versions`), in its order (revision, then
    /// sub-revision), packed as `u32 LE length, key, u32 LE length, value`
    /// per record.
    pub fn etcd_key_bucket(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for (rev, sub, k, e) in self.versions(self.revision()) {
            buf.clear();
            record_key(&mut buf, rev, sub, e.is_none());
            out.extend_from_slice(&(buf.len() as u32).to_le_bytes());
            out.extend_from_slice(&buf);
            buf.clear();
            record_value(&mut buf, k, e);
            out.extend_from_slice(&(buf.len() as u32).to_le_bytes());
            out.extend_from_slice(&buf);
        }
        out
    }
}
