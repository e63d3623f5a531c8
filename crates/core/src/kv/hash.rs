//! etcd's HashKV: a CRC-32C of the history as etcd's backend stores it, so
//! that a keyspace can be checked against an etcd that saw the same writes
//! (`etcdctl endpoint hashkv` compares members this way). It is computed
//! where the versions are, in one pass that copies nothing out: the byte
//! layout is etcd's, not this crate's.
//!
//! etcd 3.4's kvstore.hashByRev hashes the key bucket's name, then each
//! stored version's record in revision order (backend.rs: its revision as
//! key, its mvccpb.KeyValue as value). Of the versions at or before the
//! compaction point it hashes only those in `kvindex.Keep(rev)`, taken at
//! the hashed revision rather than at the compaction point: each key's
//! last version up to `rev` unless that is a deletion, or all of them when
//! no key is alive at `rev`.

use super::backend::{record_key, record_value};
use super::{Entry, Key, Keyspace};

/// CRC-32C (Castagnoli, reflected) tables for 4 bytes a step (slicing-by-4):
/// built on the first HashKV, since it reads the whole store, and not
/// stored in the binary browsers load (4 KiB that do not compress).
fn tables() -> &'static [[u32; 256]; 4] {
    static TABLES: std::sync::OnceLock<[[u32; 256]; 4]> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t = [[0u32; 256]; 4];
        for (i, slot) in t[0].iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        // Table s: a byte followed by s zero bytes.
        for s in 1..4 {
            let (done, rest) = t.split_at_mut(s);
            for (slot, &prev) in rest[0].iter_mut().zip(done[s - 1].iter()) {
                *slot = (prev >> 8) ^ done[0][(prev & 0xff) as usize];
            }
        }
        t
    })
}

struct Crc(u32);

impl Crc {
    fn update(&mut self, bytes: &[u8]) {
        let t = tables();
        let mut c = !self.0;
        let mut words = bytes.chunks_exact(4);
        for w in words.by_ref() {
            c ^= u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            c = t[3][(c & 0xff) as usize]
                ^ t[2][((c >> 8) & 0xff) as usize]
                ^ t[1][((c >> 16) & 0xff) as usize]
                ^ t[0][(c >> 24) as usize];
        }
        for &b in words.remainder() {
            c = t[0][((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
        self.0 = !c;
    }
}

impl Keyspace {
    /// etcd's HashKV of the versions up to revision `upto` (the caller has
    /// refused one at or before the compaction point, or in the future).
    /// Each key's versions are read in order (cache-friendly), then all are
    /// sorted by revision: references only, 40 bytes a version for the call.
    pub fn hash_kv(&self, upto: i64) -> u32 {
        let mut crc = Crc(0);
        crc.update(b"key");
        if upto < 1 {
            return crc.0;
        }
        // (revision, sub, key, entry or None for a deletion, and whether it
        // is the key's last up to `upto` and a put: etcd's Keep(upto));
        // whether any key is alive at `upto`.
        let mut all: Vec<(i64, u32, &Key, Option<&Entry>, bool)> = Vec::new();
        let mut alive = false;
        for (k, versions) in self.key_versions(upto) {
            let first = all.len();
            all.extend(versions.map(|(rev, sub, e)| (rev, sub, k, e, false)));
            if let Some(last) = all[first..].last_mut() {
                last.4 = last.3.is_some();
                alive |= last.4;
            }
        }
        crate::order::sort_by(&mut all, |a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut buf = Vec::new();
        for &(rev, sub, k, e, last) in &all {
            if rev > self.compacted || last || !alive {
                hash_version(&mut crc, &mut buf, rev, sub, k, e);
            }
        }
        crc.0
    }
}

/// One version's backend key and value into `crc` (`buf` is scratch).
fn hash_version(
    crc: &mut Crc,
    buf: &mut Vec<u8>,
    rev: i64,
    sub: u32,
    key: &[u8],
    e: Option<&Entry>,
) {
    buf.clear();
    record_key(buf, rev, sub, e.is_none());
    crc.update(buf);
    buf.clear();
    record_value(buf, key, e);
    crc.update(buf);
}
