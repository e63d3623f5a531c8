//! etcd's Txn: compares, then one branch of ops, all in one revision, with
//! the checks etcd makes before it applies one (op counts, keys put twice,
//! leases and revisions the taken branches need).

use std::cmp::Ordering;

use crate::counts::Tally;
use crate::error::{Error, Result};
use crate::kv::Bound;
use crate::lessor::Lessor;
use crate::ops::{Compare, CompareResult, CompareTarget, Op, OpResponse, TxnRequest, TxnResponse};
use crate::types::Entry;
use crate::write::Write;

impl Lessor {
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
