//! A write as its storage batch: the records of its key changes, the
//! superseded versions they leave as history, its lease records, the
//! compaction and the revision, written in place (`storage::Batch`).

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::{KeyChange, Write};
use crate::kv::Keyspace;
use crate::storage::{codec, Batch};
use crate::types::{Entry, Key};

impl Write {
    /// The storage batch: key records, the superseded versions they leave
    /// as history, lease records, the compaction and the revision.
    pub(super) fn batch(&self, kv: &Keyspace) -> Batch {
        let mut b = Batch::default();
        let n = self.keys.len();
        let put_old = |b: &mut Batch, rev: i64, sub: u32, key: &Key, e: Option<&Entry>| {
            b.put_with(&|o| codec::push_old_key(o, rev, sub, key), &|o| {
                codec::push_old(o, e)
            });
        };
        // Each key's last change so far: a key a write changes twice (a
        // txn's from-key delete and a put) supersedes its own staged state,
        // not the stored one. Keys staged in increasing order (one key, a
        // revoke's, a DeleteRange's) are each changed once and need no map.
        // (Of the type compaction's plan uses: each instance of a map is
        // kilobytes of wasm.)
        let mut state: Option<HashMap<&Key, usize, FixedState>> =
            (!self.increasing).then(|| HashMap::with_capacity_and_hasher(n, kv.hasher()));
        for (i, c) in self.keys.iter().enumerate() {
            let key = c.key();
            let old = match state.as_ref().and_then(|s| s.get(key)) {
                Some(&at) => self.keys[at].entry(),
                None => kv.get(key),
            };
            if let Some(old) = old {
                put_old(&mut b, old.mod_revision, old.sub, key, Some(old));
            }
            if let KeyChange::Delete { revision, sub, .. } = c {
                put_old(&mut b, *revision, *sub, key, None);
            }
            if let Some(s) = &mut state {
                s.insert(key, i);
            }
        }
        // Each key's final state once, in the order the keys were first changed.
        for c in &self.keys {
            let key = c.key();
            let last = match &mut state {
                Some(s) => s.remove(key).map(|at| self.keys[at].entry()),
                None => Some(c.entry()),
            };
            match last {
                Some(Some(e)) => b.put_with(&|o| codec::push_key_key(o, key), &|o| {
                    codec::push_entry(o, e)
                }),
                Some(None) => b.delete_with(&|o| codec::push_key_key(o, key)),
                None => {}
            }
        }
        for (id, rec) in &self.leases {
            match rec {
                Some(r) => b.put_with(&|o| codec::push_lease_key(o, *id), &|o| {
                    codec::push_lease(o, r)
                }),
                None => b.delete_with(&|o| codec::push_lease_key(o, *id)),
            }
        }
        if let Some(step) = &self.sweep {
            for (r, s, k) in &step.dropped {
                b.delete_with(&|o| codec::push_old_key(o, *r, *s, k));
            }
        }
        let compacted = self
            .compaction
            .or_else(|| self.mark_compacted.then(|| kv.compacted()));
        if let Some(rev) = compacted {
            b.put(codec::COMPACTED_KEY, &codec::encode_revision(rev));
        }
        if let Some(rev) = self.last_revision() {
            b.put(codec::REVISION_KEY, &codec::encode_revision(rev));
        }
        b
    }
}
