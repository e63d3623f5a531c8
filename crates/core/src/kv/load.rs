//! Loading a keyspace from a store's entries on restore: the live
//! entries, the superseded versions, then the revision and compaction
//! point, from which the log is rebuilt.

use super::{version_cost, Change, Keyspace, Version};
use crate::order::sort_by_revision;
use crate::types::{Entry, Key};

impl Keyspace {
    /// Loads the restored live entries into an empty keyspace; Err names a
    /// key given twice. The ordered index is built in one go from the keys
    /// sorted (stores list them in key order, so the sort is a pass), not by
    /// one search per key.
    pub(crate) fn load_live(&mut self, entries: Vec<(Key, Entry)>) -> std::result::Result<(), Key> {
        debug_assert!(self.live.is_empty() && self.index.is_empty());
        self.live.reserve(entries.len());
        let mut keys = Vec::with_capacity(entries.len());
        for (key, entry) in entries {
            self.bytes += version_cost(&key, Some(&entry));
            if self.live.insert(key.clone(), entry).is_some() {
                return Err(key);
            }
            keys.push(key);
        }
        self.index = keys.into_iter().map(|k| (k, Vec::new())).collect();
        Ok(())
    }

    /// Loads a restored superseded version, in (revision, sub) order among
    /// the key's; false if the key already has one there.
    pub(crate) fn load_old(
        &mut self,
        revision: i64,
        sub: u32,
        key: Key,
        entry: Option<Entry>,
    ) -> bool {
        let cost = version_cost(&key, entry.as_ref());
        let past = self.index.entry(key).or_default();
        // Stores list entries in key order, so versions mostly come sorted.
        match past.binary_search_by_key(&(revision, sub), |v| (v.revision, v.sub)) {
            Ok(_) => false,
            Err(at) => {
                past.insert(
                    at,
                    Version {
                        revision,
                        sub,
                        entry,
                    },
                );
                self.bytes += cost;
                true
            }
        }
    }

    /// Ends a restore: history starts at `compacted`, and the log is rebuilt
    /// from every version since (within a revision, by sub-revision, then
    /// in key order), after a change for each key a sweep has yet to visit.
    pub(crate) fn loaded(&mut self, revision: i64, compacted: i64) {
        self.revision = revision;
        self.compacted = compacted;
        // Walked map by map (no lookup per key), then sorted. A key holding
        // versions a finished compaction would have dropped (its steps were
        // cut short) gets one change in front, for the sweep to visit. (Each
        // counts as superseding a version: a sweep looks their keys up.)
        let mut log = Vec::new();
        let mut unswept = Vec::new();
        for (k, past) in self.index.iter() {
            let stale = self.droppable(k, past);
            if stale > 0 {
                unswept.push(Change {
                    revision: past[0].revision,
                    sub: past[0].sub,
                    key: k.clone(),
                    superseded: true,
                });
            }
            for v in past[stale..].iter().filter(|v| v.revision >= compacted) {
                log.push(Change {
                    revision: v.revision,
                    sub: v.sub,
                    key: k.clone(),
                    superseded: true,
                });
            }
        }
        for (k, e) in self.live.iter() {
            if e.mod_revision >= compacted {
                log.push(Change {
                    revision: e.mod_revision,
                    sub: e.sub,
                    key: k.clone(),
                    superseded: true,
                });
            }
        }
        let at = |c: &Change| (c.revision, c.sub);
        let then = |a: &Change, b: &Change| a.key.cmp(&b.key);
        sort_by_revision(&mut unswept, at, then);
        sort_by_revision(&mut log, at, then);
        log.dedup_by(|a, b| at(a) == at(b) && a.key == b.key);
        self.unswept = unswept.len();
        unswept.extend(log);
        self.log = unswept.into();
    }
}
