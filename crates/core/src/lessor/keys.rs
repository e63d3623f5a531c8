//! Reads and writes of keys, with etcd's KV semantics: get, put, delete,
//! Range and DeleteRange. Each write stages its changes in one [`Write`]
//! (so one revision), and the ops of a transaction (`txn.rs`) read what its
//! earlier ops staged through the same helpers. Reads see a key only while
//! its lease lives.

use crate::counts::Tally;
use crate::error::{Error, Result};
use crate::kv::{cost, Bound, RangeRequest, RangeResponse};
use crate::lessor::Lessor;
use crate::ops::{DeleteRequest, DeleteResponse, DeleteResult, PutOptions, PutRequest, PutResult};
use crate::text::Text;
use crate::types::{Entry, Key};
use crate::write::Write;

impl Lessor {
    /// A live key's entry.
    pub fn get(&mut self, now: i64, key: &[u8]) -> Option<&Entry> {
        let now = self.observe(now);
        self.counts.ranges += 1;
        let leases = &self.leases;
        self.kv.get(key).filter(|e| leases.keeps(e.lease, now))
    }

    /// Live keys starting with `prefix` (all keys for an empty prefix), sorted.
    pub fn range<'a>(&'a mut self, now: i64, prefix: &'a [u8]) -> Vec<(&'a [u8], &'a Entry)> {
        let now = self.observe(now);
        self.counts.ranges += 1;
        let leases = &self.leases;
        self.kv
            .prefix(prefix)
            .filter(|(_, e)| leases.keeps(e.lease, now))
            .collect()
    }

    /// Writes a key. See [`PutOptions`].
    pub fn put(
        &mut self,
        now: i64,
        key: &[u8],
        value: &[u8],
        opts: PutOptions,
    ) -> Result<PutResult> {
        let now = self.observe(now);
        self.write_put(now, key, value, opts)
    }

    /// etcd's Put: as a one-put [`Lessor::txn`] but for the order of its
    /// checks (the lease before the key `ignore_value` needs) and its counts
    /// (no separate read for the checks).
    pub fn put_kv(&mut self, now: i64, p: &PutRequest) -> Result<PutResult> {
        let now = self.observe(now);
        self.config.check_key(&p.key)?;
        let o = p.options;
        if o.lease != 0 && self.leases.live(o.lease, now).is_none() {
            return Err(Error::LeaseNotFound(o.lease));
        }
        if (o.ignore_value || o.ignore_lease)
            && self.current(now, &Write::new(&self.kv), &p.key).is_none()
        {
            // etcd read the key to find it missing.
            self.counts.ranges += 1;
            return Err(Error::KeyNotFound);
        }
        self.write_put(now, &p.key, &p.value, o)
    }

    /// One put in a revision of its own, counted once it is committed.
    fn write_put(
        &mut self,
        now: i64,
        key: &[u8],
        value: &[u8],
        opts: PutOptions,
    ) -> Result<PutResult> {
        let (r, t) = self.with_space(|l| {
            let mut w = Write::new(&l.kv);
            let mut t = Tally::default();
            let r = l.stage_put(now, &mut w, &mut t, key, value, opts)?;
            l.commit(w)?;
            Ok((r, t))
        })?;
        t.end(&mut self.counts);
        Ok(r)
    }

    /// Deletes a live key (detaching it from its lease).
    pub fn delete(&mut self, now: i64, key: &[u8], want_prev: bool) -> Result<DeleteResult> {
        let r = self.delete_range(
            now,
            &DeleteRequest {
                key: key.to_vec(),
                range_end: Vec::new(),
                prev_kv: want_prev,
            },
        )?;
        Ok(DeleteResult {
            deleted: r.deleted > 0,
            revision: r.revision,
            prev: r.prev_kvs.into_iter().next().map(|(_, e)| e),
        })
    }

    /// etcd's Range: keys in a range, at the current or a past revision.
    pub fn range_kv(&mut self, now: i64, req: &RangeRequest) -> Result<RangeResponse> {
        let now = self.observe(now);
        self.config.check_query_key(&req.key)?;
        let mut t = Tally::default();
        let r = self.read(now, &Write::new(&self.kv), &mut t, req);
        t.end(&mut self.counts);
        r
    }

    /// etcd's DeleteRange: deletes the live keys of a range in one revision.
    pub fn delete_range(&mut self, now: i64, req: &DeleteRequest) -> Result<DeleteResponse> {
        let now = self.observe(now);
        self.config.check_query_key(&req.key)?;
        let mut w = Write::new(&self.kv);
        let mut t = Tally::default();
        let mut r = self.stage_delete(now, &mut w, &mut t, req)?;
        r.revision = self.commit(w)?;
        t.end(&mut self.counts);
        Ok(r)
    }

    /// A key as the write `w` would leave it: staged, or live and visible.
    pub(super) fn current<'a>(&'a self, now: i64, w: &'a Write, key: &[u8]) -> Option<&'a Entry> {
        match w.staged(key) {
            Some(staged) => staged,
            None => self.kv.get(key).filter(|e| self.leases.keeps(e.lease, now)),
        }
    }

    /// The visible entries of `[key, range_end)` (or the key alone) after
    /// `w`, in key order.
    pub(super) fn visible<'a>(
        &'a self,
        now: i64,
        w: &'a Write,
        key: &'a [u8],
        range_end: &'a [u8],
    ) -> Vec<(&'a Key, &'a Entry)> {
        let Some(end) = Bound::of(range_end) else {
            let entry = self.current(now, w, key);
            return match (entry, self.kv.key_ref(key)) {
                (Some(e), Some(k)) => vec![(k, e)],
                (Some(e), None) => w
                    .staged_keys()
                    .find(|k| ***k == *key)
                    .map(|k| vec![(k, e)])
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
        };
        let live = self
            .kv
            .range(key, end)
            .filter(|(_, e)| self.leases.keeps(e.lease, now));
        if !w.changes_keys() {
            return live.collect();
        }
        // Overlay what the write staged in the range (a transaction's few
        // ops) on the live entries, in key order. (In a list, not an ordered
        // map: each instance of a map is kilobytes of wasm.)
        let mut merged: Vec<(&Key, Option<&Entry>)> = live.map(|(k, e)| (k, Some(e))).collect();
        for k in w.staged_keys() {
            if **k >= *key && end.admits(k) {
                let staged = w.staged(k).flatten();
                match merged.binary_search_by(|(m, _)| m[..].cmp(&k[..])) {
                    Ok(i) => merged[i].1 = staged,
                    Err(i) => merged.insert(i, (k, staged)),
                }
            }
        }
        merged
            .into_iter()
            .filter_map(|(k, e)| e.map(|e| (k, e)))
            .collect()
    }

    /// A range read inside the write `w` (which may have staged changes).
    pub(super) fn read(
        &self,
        now: i64,
        w: &Write,
        t: &mut Tally,
        req: &RangeRequest,
    ) -> Result<RangeResponse> {
        t.ranges += 1;
        let committed = self.kv.revision();
        let current = committed + w.changes_keys() as i64;
        let rev = if req.revision <= 0 {
            current
        } else {
            req.revision
        };
        if rev > current {
            return Err(Error::FutureRevision);
        }
        if rev < self.kv.compacted() {
            return Err(Error::Compacted(self.kv.compacted()));
        }
        if rev == current {
            let v = self.visible(now, w, &req.key, &req.range_end);
            return Ok(req.respond(v.into_iter(), current));
        }
        if rev == committed {
            let none = Write::new(&self.kv);
            let v = self.visible(now, &none, &req.key, &req.range_end);
            return Ok(req.respond(v.into_iter(), current));
        }
        Ok(match Bound::of(&req.range_end) {
            None => {
                let hit = self
                    .kv
                    .key_ref(&req.key)
                    .and_then(|k| self.kv.get_at(k, rev).map(|e| (k, e)));
                req.respond(hit.into_iter(), current)
            }
            Some(end) => req.respond(self.kv.range_at(&req.key, end, rev), current),
        })
    }

    /// Stages a put in `w`. An `if_absent` put that finds the key stages
    /// nothing and returns the holder.
    pub(super) fn stage_put(
        &self,
        now: i64,
        w: &mut Write,
        t: &mut Tally,
        key: &[u8],
        value: &[u8],
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.config.check_key(key)?;
        // A txn puts a key once (check_intervals); it may put a key an
        // earlier from-key delete of the txn deleted.
        let existing = match w.staged(key) {
            Some(Some(_)) => return Err(Error::DuplicateKey),
            Some(None) => None,
            None => self.kv.get(key),
        };
        let live = existing.filter(|e| self.leases.keeps(e.lease, now));
        if opts.prev || opts.ignore_value || opts.ignore_lease || opts.if_absent {
            t.ranges += 1;
        }
        if (opts.ignore_value || opts.ignore_lease) && live.is_none() {
            return Err(Error::KeyNotFound);
        }
        let value = match live {
            Some(e) if opts.ignore_value => &e.value[..],
            _ => value,
        };
        let lease = match live {
            Some(e) if opts.ignore_lease => e.lease,
            _ => opts.lease,
        };
        self.config.check_value(value, opts.text)?;
        // Whether the put attaches a key the lease does not have yet,
        // counted with those the ops before it in a txn attached.
        let mut attaches = false;
        if lease != 0 {
            let Some(l) = self.leases.live(lease, now) else {
                return Err(Error::LeaseNotFound(lease));
            };
            if l.keys.binary_search_by(|k| (**k).cmp(key)).is_err() {
                if l.keys.len() + w.attached(lease) >= self.config.max_keys_per_lease {
                    let why = Text::new("lease ")
                        .hex(lease as u64)
                        .s(" would carry more than ");
                    let max = self.config.max_keys_per_lease as u64;
                    return Err(Error::invalid(why.udec(max).s(" keys (maxKeysPerLease)")));
                }
                attaches = true;
            }
        }
        if opts.if_absent {
            if let Some(holder) = live {
                return Ok(PutResult {
                    created: false,
                    revision: self.kv.revision(),
                    prev: Some(holder.clone()),
                });
            }
        }
        let needed = self.kv.bytes() + w.added_bytes() + cost(key, value);
        if needed > self.config.quota_bytes {
            return Err(Error::NoSpace);
        }
        let revision = w.revision();
        let (create_revision, version) = match live {
            Some(e) => (e.create_revision, e.version + 1),
            None => (revision, 1),
        };
        let entry = Entry {
            value: value.into(),
            text: opts.text,
            create_revision,
            mod_revision: revision,
            version,
            sub: 0, // Write::put gives it its sub-revision
            lease,
        };
        let result = PutResult {
            created: live.is_none(),
            revision,
            prev: if opts.prev { live.cloned() } else { None },
        };
        t.put(key, value);
        // An expired holder loses the key to this write.
        let old_lease = existing.map_or(0, |e| e.lease);
        w.put(self.kv.key(key), entry, old_lease);
        if attaches {
            w.attach(lease);
        }
        Ok(result)
    }

    /// Stages the deletion of the visible keys of a range.
    pub(super) fn stage_delete(
        &self,
        now: i64,
        w: &mut Write,
        t: &mut Tally,
        req: &DeleteRequest,
    ) -> Result<DeleteResponse> {
        t.ranges += req.prev_kv as u64;
        t.deletes += 1;
        let doomed = self.visible(now, w, &req.key, &req.range_end);
        let deleted = doomed.len() as i64;
        // (The entries are copied only when asked for: their values.)
        let prev_kvs: Vec<(Key, Entry)> = if req.prev_kv {
            doomed
                .iter()
                .map(|(k, e)| ((*k).clone(), (*e).clone()))
                .collect()
        } else {
            Vec::new()
        };
        let doomed: Vec<_> = doomed
            .into_iter()
            .map(|(k, e)| (k.clone(), e.lease))
            .collect();
        w.reserve(doomed.len());
        for (k, lease) in doomed {
            w.delete(k, lease);
        }
        let revision = if w.changes_keys() {
            w.revision()
        } else {
            self.kv.revision()
        };
        Ok(DeleteResponse {
            deleted,
            prev_kvs,
            revision,
        })
    }
}
