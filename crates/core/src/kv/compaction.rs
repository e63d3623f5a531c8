//! Compaction in two parts, as etcd's mvcc does it: the point moves at once
//! (`compact`: reads and watches before it are refused from then on, and a
//! watch from the point sees what it will see once swept), and the versions
//! it left unreadable are dropped afterwards in bounded steps (`plan_sweep`,
//! then `sweep` once the step's deletes are stored), so that a compaction
//! of millions of versions never stops the host for as long as it takes.
//!
//! Which versions a point at P leaves unreadable is one rule per key: of
//! its versions at or before P only the last is read there (a read at P,
//! a watch from P), and not even that when it is a deletion (mvcc's
//! keyIndex.compact). Those are always a prefix of the key's superseded
//! versions (`droppable`). Every key with such a prefix has a change in the
//! log's front region, which sweeps visit: the changes before the point
//! (they leave the log once visited), then the changes at the point that
//! stay visible (their keys may hold older versions to drop). Until swept,
//! the versions are still held but never read: `key_versions` and
//! `keys_after` leave them out, so the HashKV, the snapshot file and a
//! store's rewrite are those of the finished compaction.

use std::collections::HashMap;

use super::{version_cost, Change, Key, Keyspace, Version, VersionAt};

/// One sweep step planned on the keyspace as it is (`Keyspace::plan_sweep`):
/// what its store batch deletes, then what `Keyspace::sweep` drops.
#[derive(Default)]
pub struct Sweep {
    /// The keys the step finishes, each with how many versions it drops
    /// from the front of its history.
    drops: Vec<(Key, usize)>,
    /// The key the step ends in, and how many of its versions are then
    /// deleted from the store (`Keyspace::partial`).
    partial: Option<(Key, usize)>,
    /// The versions the step deletes from the store.
    pub dropped: Vec<VersionAt>,
    /// How many changes of the region the step finishes, from its front.
    changes: usize,
}

impl Keyspace {
    /// How many versions at the front of `past` (the key's superseded
    /// versions) the compaction point leaves unreadable.
    #[inline(never)]
    pub(super) fn droppable(&self, key: &[u8], past: &[Version]) -> usize {
        let point = self.compacted;
        let n = past.partition_point(|v| v.revision <= point);
        if n == 0 {
            return 0;
        }
        let live_before = self.live.get(key).is_some_and(|e| e.mod_revision <= point);
        if live_before || past[n - 1].entry.is_none() {
            n
        } else {
            n - 1
        }
    }

    /// Moves the compaction point to `revision` (past the current one is
    /// the caller's to refuse). Costs the changes at `revision`, not the
    /// history before it.
    pub(crate) fn compact(&mut self, revision: i64) {
        if revision <= self.compacted {
            return;
        }
        // The key a step ended in is tied to its change's place in the
        // region, which this reorders: its versions already deleted from the
        // store go from memory now (one move of its history).
        if let Some((key, n)) = self.partial.take() {
            self.drop_front(&key, n);
        }
        self.compacted = revision;
        // Every change before the point waits to be swept (earlier
        // compactions' unswept ones too: they are before theirs).
        let before = self.log.partition_point(|c| c.revision < revision);
        let end = self.log.partition_point(|c| c.revision <= revision);
        // At the point: those a watch from it does not see go with the
        // changes before it; the others stay, after them, in sub order.
        let at: Vec<Change> = self.log.range(before..end).cloned().collect();
        let (gone, kept): (Vec<Change>, Vec<Change>) =
            at.into_iter().partition(|c| !self.seen_at_point(c));
        self.unswept = before + gone.len();
        self.kept = kept.len();
        self.kept_swept = 0;
        for (slot, c) in self
            .log
            .range_mut(before..end)
            .zip(gone.into_iter().chain(kept))
        {
            *slot = c;
        }
    }

    /// Whether change `c` at the compaction point is the key's last change
    /// up to it and a put: the one change there a watch from it sees.
    fn seen_at_point(&self, c: &Change) -> bool {
        if let Some(e) = self.live.get(&*c.key) {
            if e.mod_revision <= self.compacted {
                return (e.mod_revision, e.sub) == (c.revision, c.sub);
            }
        }
        let past = self.index.get(&*c.key).map_or(&[][..], |p| &p[..]);
        let n = past.partition_point(|v| v.revision <= self.compacted);
        n > 0 && {
            let last = &past[n - 1];
            (last.revision, last.sub) == (c.revision, c.sub) && last.entry.is_some()
        }
    }

    /// Changes whose keys a sweep has yet to visit.
    pub fn unswept(&self) -> usize {
        self.unswept + (self.kept - self.kept_swept)
    }

    /// Plans the next sweep step: about `max` versions deleted from the
    /// store (a key's may be split over steps), and at most `max` changes
    /// visited. Reads only; `sweep` applies it.
    pub fn plan_sweep(&self, max: usize) -> Sweep {
        let max = max.max(1);
        let mut step = Sweep::default();
        // Per key visited: how many of its versions are deleted from the
        // store by the end of the step (a key may be visited more than
        // once, and the one the last step ended in has some deleted).
        let mut planned: HashMap<&Key, usize, _> = HashMap::with_hasher(self.hasher());
        if let Some((k, n)) = &self.partial {
            planned.insert(k, *n);
        }
        let region =
            (0..self.unswept).chain(self.unswept + self.kept_swept..self.unswept + self.kept);
        for i in region.take(max) {
            let c = &self.log[i];
            // A change that superseded no version (a key created) is not
            // looked up: the versions its key may hold were superseded by
            // its other changes, each of which comes in the log and in the
            // region no later than the point that leaves them unreadable,
            // where it is visited. (Distinct keys put, as leases' keys are,
            // would otherwise cost a search of the index per change.)
            if !c.superseded {
                step.changes += 1;
                continue;
            }
            if let Some((k, past)) = self.index.get_key_value(&*c.key) {
                let done = planned.get(k).copied().unwrap_or(0);
                // (A key's droppable prefix only grows while a step is partial.)
                let n = self.droppable(k, past).saturating_sub(done);
                let room = max.saturating_sub(step.dropped.len());
                let m = n.min(room);
                step.dropped.extend(
                    past[done..done + m]
                        .iter()
                        .map(|v| (v.revision, v.sub, k.clone())),
                );
                planned.insert(k, done + m);
                if m < n {
                    // The key's next step goes on with this change.
                    step.partial = Some((k.clone(), done + m));
                    break;
                }
            }
            step.changes += 1;
        }
        let partial = step.partial.as_ref().map(|(k, _)| k);
        step.drops = planned
            .into_iter()
            .filter(|&(k, n)| n > 0 && Some(k) != partial)
            .map(|(k, n)| (k.clone(), n))
            .collect();
        step
    }

    /// Drops the first `n` versions of `key`'s history from memory.
    fn drop_front(&mut self, key: &[u8], n: usize) {
        let Some(past) = self.index.get_mut(key) else {
            return;
        };
        let freed: usize = past
            .drain(..n.min(past.len()))
            .map(|v| version_cost(key, v.entry.as_ref()))
            .sum();
        self.bytes -= freed;
        if past.is_empty() && !self.live.contains_key(key) {
            self.index.remove(key);
        }
    }

    /// Applies a step `plan_sweep` planned on the keyspace as it still is
    /// (its deletes stored). A key's versions leave memory once all are
    /// deleted from the store, in one move of its history (dropping a few
    /// at a time from the front of a long one would move it every step).
    pub(crate) fn sweep(&mut self, step: Sweep) {
        for (key, n) in step.drops {
            self.drop_front(&key, n);
        }
        self.partial = step.partial;
        let gone = step.changes.min(self.unswept);
        self.log.drain(..gone);
        self.unswept -= gone;
        self.kept_swept += step.changes - gone;
        if self.unswept == 0 && self.kept_swept >= self.kept {
            self.kept = 0;
            self.kept_swept = 0;
        }
        if self.log.len() < self.log.capacity() / 4 {
            self.log.shrink_to_fit();
        }
    }
}
