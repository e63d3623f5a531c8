//! Reads and writes of keys, with etcd's KV semantics: Range, Put,
//! DeleteRange, Txn and Compact. Each write stages its changes in one
//! [`Write`] (so one revision), and the ops of a transaction read what its
//! earlier ops staged. Reads see a key only while its lease lives.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::counts::Tally;
use crate::error::{Error, Result};
use crate::kv::{cost, Bound, Entry, Key, KeyBucketCursor, RangeRequest, RangeResponse};
use crate::lessor::Lessor;
use crate::ops::{
    Compare, CompareResult, CompareTarget, DeleteRequest, DeleteResponse, DeleteResult, Op,
    OpResponse, PutOptions, PutRequest, PutResult, TxnRequest, TxnResponse,
};
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

    /// etcd's Txn: compares, then one branch of ops, all in one revision.
    /// Nothing changes unless every op succeeds.
    pub fn txn(&mut self, now: i64, req: &TxnRequest) -> Result<TxnResponse> {
        let now = self.observe(now);
        self.check_txn(req)?;
        check_intervals(&req.success)?;
        check_intervals(&req.failure)?;
        // Every compare, nested ones included, sees the state before the
        // transaction, as etcd evaluates them.
        let mut path = Vec::new();
        // A txn that writes reads its compares and checks in a store
        // transaction of its own (etcd's counts show it); one that only
        // reads does everything in one.
        let mut reads = Tally::default();
        self.compare_path(now, req, &mut reads, &mut path);
        let checked = self
            .check_branch(now, req, &path, &mut 0, &mut reads, Pass::Puts)
            .and_then(|_| self.check_branch(now, req, &path, &mut 0, &mut reads, Pass::Ranges));
        if let Err(e) = checked {
            reads.end(&mut self.counts);
            return Err(e);
        }
        let writes = req
            .success
            .iter()
            .chain(&req.failure)
            .any(|op| !matches!(op, Op::Range(_)));
        // (A write the quota refuses counts nothing: etcd refuses it before
        // its store sees it.)
        let (resp, mut t) = self.with_space(|l| {
            let mut w = Write::new(&l.kv);
            let mut t = Tally::default();
            let mut resp = l.stage_txn(now, &mut w, &mut t, req, &path, &mut 0)?;
            resp.revision = l.commit(w)?;
            Ok((resp, t))
        })?;
        if writes {
            reads.end(&mut self.counts);
        } else {
            t.add(reads);
        }
        t.end(&mut self.counts);
        Ok(resp)
    }

    /// Runs a write; if it would pass the quota while history no watcher
    /// needs is held, compacts that history and tries once more (history
    /// is the first thing to give, rather than refusing writes).
    fn with_space<T>(&mut self, write: impl Fn(&mut Self) -> Result<T>) -> Result<T> {
        match write(self) {
            Err(Error::NoSpace) => {
                let wanted = self.watchers.oldest_wanted().unwrap_or(i64::MAX);
                let to = wanted.min(self.kv.revision());
                let moves = self.compaction_moves_to(to);
                if !moves && self.kv.unswept() == 0 {
                    return Err(Error::NoSpace);
                }
                if moves {
                    let mut w = Write::new(&self.kv);
                    w.compact(to);
                    self.commit(w)?;
                }
                // The space comes back only once swept: all of it, now.
                while self.compact_step(usize::MAX)? > 0 {}
                write(self)
            }
            r => r,
        }
    }

    /// The compaction point: reads and watches before it are refused. -1
    /// until the first compaction (etcd's), which may be at 0.
    pub fn compacted(&self) -> i64 {
        self.kv.compacted()
    }

    /// Every version of every key held up to revision `upto` (history since
    /// the compaction point, each key's state kept at it, and the live
    /// entries), in commit order: (revision, sub-revision, key, entry or
    /// None for a deletion): what etcd's backend would hold. It walks
    /// everything and sorts it, so it costs the store's size.
    pub fn versions(&self, upto: i64) -> Vec<(i64, u32, &[u8], Option<&Entry>)> {
        self.kv
            .versions(upto)
            .into_iter()
            .map(|(rev, sub, k, e)| (rev, sub, &**k, e))
            .collect()
    }

    /// etcd's HashKV of the history up to revision `upto` (0: the current
    /// one): the same writes hash the same here and on etcd 3.4. Refuses,
    /// as etcd, a revision at or before the compaction point or in the
    /// future; a negative one hashes no version.
    pub fn hash_kv(&self, upto: i64) -> Result<u32> {
        if upto > 0 && upto <= self.kv.compacted() {
            return Err(Error::Compacted(self.kv.compacted()));
        }
        if upto > self.kv.revision() {
            return Err(Error::FutureRevision);
        }
        Ok(self
            .kv
            .hash_kv(if upto == 0 { self.kv.revision() } else { upto }))
    }

    /// The history as etcd 3.4's backend holds it in its key bucket, for a
    /// snapshot file etcd can restore: `u32 LE length, key, u32 LE length,
    /// value` per record, in revision order (`kv/backend.rs`).
    pub fn etcd_key_bucket(&self) -> Vec<u8> {
        self.kv.etcd_key_bucket()
    }

    /// Starts reading the key bucket in pieces (`etcd_key_bucket_next`), for
    /// a history too large to copy whole; its records' heads come with it
    /// (`KeyBucketCursor::take_heads`).
    pub fn etcd_key_bucket_cursor(&self) -> KeyBucketCursor {
        self.kv.key_bucket_cursor()
    }

    /// The key bucket's next records, about `max` bytes (at least one),
    /// packed as `etcd_key_bucket` packs them; empty once done. Fails with
    /// `Compacted` if a compaction since the cursor began dropped one.
    pub fn etcd_key_bucket_next(
        &self,
        cursor: &mut KeyBucketCursor,
        max: usize,
    ) -> Result<Vec<u8>> {
        self.kv.key_bucket_next(cursor, max)
    }

    /// Bytes of keys, values and history, as the quota counts them.
    pub fn size_bytes(&self) -> usize {
        self.kv.bytes()
    }

    /// Forgets history before `revision` (etcd's Compact): reads and
    /// watches before it are refused from now on. Returns the current
    /// revision. The versions it leaves unreadable are dropped by later
    /// steps (`compact_step`), and a few with each write, so that a large
    /// compaction never stops the host for its whole length.
    pub fn compact(&mut self, revision: i64) -> Result<i64> {
        if revision <= self.kv.compacted() {
            return Err(Error::Compacted(self.kv.compacted()));
        }
        if revision > self.kv.revision() {
            return Err(Error::FutureRevision);
        }
        let mut w = Write::new(&self.kv);
        w.compact(revision);
        let rev = self.commit(w)?;
        // etcd reads a key to answer with the current revision.
        self.counts.ranges += 1;
        Ok(rev)
    }

    /// Drops about `max` of the versions compactions left unreadable (one
    /// storage batch). Returns how many changes are left to visit: 0 once
    /// the compactions so far are done (etcd's physical compaction).
    pub fn compact_step(&mut self, max: usize) -> Result<usize> {
        if self.kv.unswept() > 0 {
            let mut w = Write::new(&self.kv);
            w.sweep(&self.kv, max);
            self.commit(w)?;
        }
        Ok(self.kv.unswept())
    }

    /// How many changes sweeps have yet to visit (`compact_step`): 0 once
    /// every compaction so far has dropped what it left unreadable.
    pub fn compaction_pending(&self) -> usize {
        self.kv.unswept()
    }

    /// A key as the write `w` would leave it: staged, or live and visible.
    fn current<'a>(&'a self, now: i64, w: &'a Write, key: &[u8]) -> Option<&'a Entry> {
        match w.staged(key) {
            Some(staged) => staged,
            None => self.kv.get(key).filter(|e| self.leases.keeps(e.lease, now)),
        }
    }

    /// The visible entries of `[key, range_end)` (or the key alone) after
    /// `w`, in key order.
    fn visible<'a>(
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
        // Overlay what the write staged in the range.
        // Inserted one by one: collecting into a BTreeMap sorts, and each
        // sort instance costs kilobytes of wasm.
        let mut merged: BTreeMap<&Key, Option<&Entry>> = BTreeMap::new();
        for (k, e) in live {
            merged.insert(k, Some(e));
        }
        for k in w.staged_keys() {
            if **k >= *key && end.admits(k) {
                merged.insert(k, w.staged(k).flatten());
            }
        }
        merged
            .into_iter()
            .filter_map(|(k, e)| e.map(|e| (k, e)))
            .collect()
    }

    /// A range read inside the write `w` (which may have staged changes).
    fn read(
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
    fn stage_put(
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
                    return Err(Error::invalid(format!(
                        "lease {:016x} would carry more than {} keys (maxKeysPerLease)",
                        lease as u64, self.config.max_keys_per_lease
                    )));
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
    fn stage_delete(
        &self,
        now: i64,
        w: &mut Write,
        t: &mut Tally,
        req: &DeleteRequest,
    ) -> Result<DeleteResponse> {
        t.ranges += req.prev_kv as u64;
        t.deletes += 1;
        let doomed: Vec<(Key, Entry)> = self
            .visible(now, w, &req.key, &req.range_end)
            .into_iter()
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        let deleted = doomed.len() as i64;
        for (k, e) in &doomed {
            w.delete(k.clone(), e.lease);
        }
        let revision = if w.changes_keys() {
            w.revision()
        } else {
            self.kv.revision()
        };
        Ok(DeleteResponse {
            deleted,
            prev_kvs: if req.prev_kv { doomed } else { Vec::new() },
            revision,
        })
    }

    /// etcd's request checks: op counts and keys, recursively.
    fn check_txn(&self, req: &TxnRequest) -> Result<()> {
        let ops = req
            .compare
            .len()
            .max(req.success.len())
            .max(req.failure.len());
        if ops > self.config.max_txn_ops {
            return Err(Error::TooManyOps);
        }
        for c in &req.compare {
            self.config.check_query_key(&c.key)?;
        }
        for op in req.success.iter().chain(&req.failure) {
            match op {
                Op::Range(r) => self.config.check_query_key(&r.key)?,
                Op::Put(p) => self.config.check_key(&p.key)?,
                Op::Delete(d) => self.config.check_query_key(&d.key)?,
                Op::Txn(t) => self.check_txn(t)?,
            }
        }
        Ok(())
    }

    /// The branch each transaction takes, outermost first, then each nested
    /// transaction of the taken branch in order (etcd's txn path).
    /// Each compare read counts as a range; they stop at the first that fails.
    fn compare_path(&self, now: i64, req: &TxnRequest, t: &mut Tally, path: &mut Vec<bool>) {
        let w = Write::new(&self.kv);
        let ok = req.compare.iter().all(|c| {
            t.ranges += 1;
            self.holds(now, &w, c)
        });
        path.push(ok);
        for op in if ok { &req.success } else { &req.failure } {
            if let Op::Txn(nested) = op {
                self.compare_path(now, nested, t, path);
            }
        }
    }

    fn holds(&self, now: i64, w: &Write, c: &Compare) -> bool {
        let entries = self.visible(now, w, &c.key, &c.range_end);
        if entries.is_empty() {
            if matches!(c.target, CompareTarget::Value(_)) {
                return false;
            }
            let zero = Entry {
                value: Box::default(),
                text: false,
                create_revision: 0,
                mod_revision: 0,
                version: 0,
                sub: 0,
                lease: 0,
            };
            return compare(c, &zero);
        }
        entries.iter().all(|(_, e)| compare(c, e))
    }

    /// The checks etcd makes before applying a transaction: first that every
    /// put of the taken branches can happen, then that every range can.
    fn check_branch(
        &self,
        now: i64,
        req: &TxnRequest,
        path: &[bool],
        at: &mut usize,
        t: &mut Tally,
        pass: Pass,
    ) -> Result<()> {
        let ok = path[*at];
        *at += 1;
        let w = Write::new(&self.kv);
        for op in if ok { &req.success } else { &req.failure } {
            match (op, pass) {
                (Op::Txn(nested), _) => self.check_branch(now, nested, path, at, t, pass)?,
                (Op::Put(p), Pass::Puts) => {
                    let o = &p.options;
                    if o.ignore_value || o.ignore_lease {
                        t.ranges += 1;
                        if self.current(now, &w, &p.key).is_none() {
                            return Err(Error::KeyNotFound);
                        }
                    }
                    if o.lease != 0 && !o.ignore_lease && self.leases.live(o.lease, now).is_none() {
                        return Err(Error::LeaseNotFound(o.lease));
                    }
                }
                (Op::Range(r), Pass::Ranges) => {
                    // Against the revision before the transaction, as etcd.
                    if r.revision > self.kv.revision() {
                        return Err(Error::FutureRevision);
                    }
                    // Any revision but 0, negative ones included (etcd's
                    // checkRequestRange), though they then read the current one.
                    if r.revision != 0 && r.revision < self.kv.compacted() {
                        return Err(Error::Compacted(self.kv.compacted()));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn stage_txn(
        &self,
        now: i64,
        w: &mut Write,
        t: &mut Tally,
        req: &TxnRequest,
        path: &[bool],
        at: &mut usize,
    ) -> Result<TxnResponse> {
        let ok = path[*at];
        *at += 1;
        let mut responses = Vec::new();
        for op in if ok { &req.success } else { &req.failure } {
            responses.push(match op {
                Op::Range(r) => OpResponse::Range(self.read(now, w, t, r)?),
                Op::Put(p) => {
                    OpResponse::Put(self.stage_put(now, w, t, &p.key, &p.value, p.options)?)
                }
                Op::Delete(d) => OpResponse::Delete(self.stage_delete(now, w, t, d)?),
                Op::Txn(nested) => {
                    let mut r = self.stage_txn(now, w, t, nested, path, at)?;
                    r.revision = 0;
                    OpResponse::Txn(r)
                }
            });
        }
        Ok(TxnResponse {
            succeeded: ok,
            responses,
            revision: 0,
        })
    }
}

/// Key ranges as (key, range_end).
type Ranges = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Clone, Copy)]
enum Pass {
    Puts,
    Ranges,
}

fn compare(c: &Compare, e: &Entry) -> bool {
    let ord = match &c.target {
        CompareTarget::Version(v) => e.version.cmp(v),
        CompareTarget::Create(v) => e.create_revision.cmp(v),
        CompareTarget::Mod(v) => e.mod_revision.cmp(v),
        CompareTarget::Lease(v) => e.lease.cmp(v),
        CompareTarget::Value(v) => e.value[..].cmp(&v[..]),
    };
    match c.result {
        CompareResult::Equal => ord == Ordering::Equal,
        CompareResult::NotEqual => ord != Ordering::Equal,
        CompareResult::Greater => ord == Ordering::Greater,
        CompareResult::Less => ord == Ordering::Less,
    }
}

/// etcd's duplicate check: within one transaction no two puts write one key
/// and no put writes a key a delete range covers, nested branches included.
/// A from-key delete (`range_end` "\0") covers nothing here: etcd 3.4 checks
/// the interval [key, "\0"), which is empty, so it lets a txn delete from a
/// key on and put keys there (applied in order, in one revision).
/// Returns the keys put and the delete ranges, for the enclosing level.
fn check_intervals(ops: &[Op]) -> Result<(Vec<Vec<u8>>, Ranges)> {
    let mut dels: Ranges = ops
        .iter()
        .filter_map(|op| match op {
            Op::Delete(d) => Some((d.key.clone(), d.range_end.clone())),
            _ => None,
        })
        .collect();
    let covered = |dels: &Ranges, k: &[u8]| {
        dels.iter().any(|(from, end)| match Bound::of(end) {
            None => from == k,
            Some(_) if end[..] == [0] => false,
            Some(end) => k >= &from[..] && end.admits(k),
        })
    };
    let mut puts: Vec<Vec<u8>> = Vec::new();
    for op in ops {
        let Op::Txn(t) = op else { continue };
        let (then_puts, then_dels) = check_intervals(&t.success)?;
        let (else_puts, else_dels) = check_intervals(&t.failure)?;
        for k in &then_puts {
            if puts.contains(k) || covered(&dels, k) {
                return Err(Error::DuplicateKey);
            }
        }
        for k in &else_puts {
            // The two branches never both run: a key both put is fine.
            if (puts.contains(k) && !then_puts.contains(k)) || covered(&dels, k) {
                return Err(Error::DuplicateKey);
            }
        }
        puts.extend(then_puts);
        puts.extend(else_puts);
        dels.extend(then_dels);
        dels.extend(else_dels);
    }
    for op in ops {
        let Op::Put(p) = op else { continue };
        if puts.contains(&p.key) || covered(&dels, &p.key) {
            return Err(Error::DuplicateKey);
        }
        puts.push(p.key.clone());
    }
    Ok((puts, dels))
}
