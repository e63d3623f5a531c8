//! Model-based test of the keyspace's etcd semantics: random puts, range
//! deletes, transactions, lease expiries and compactions against a model
//! that keeps the whole keyspace at every revision. Every read at a random
//! past revision, and every watcher's events, must match the model.

#![cfg(not(target_arch = "wasm32"))] // proptest is a native-only dev-dependency

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use edge_lease_core::{
    Batch, Compare, CompareResult, CompareTarget, Config, DeleteRequest, Error, Event, Lessor, Op,
    OpResponse, PutOptions, PutRequest, RangeRequest, SortOrder, SortTarget, Storage, TxnRequest,
    WatchEvents, WatchRequest,
};
use proptest::prelude::*;

mod common;
use common::MemStore;

const T0: i64 = 1_700_000_000_000;
const KEYS: [&[u8]; 6] = [b"a", b"a/1", b"a/2", b"b", b"b/1", b"c"];

/// Runs the compaction's sweep to its end: what `compact` left unreadable is
/// then dropped from memory and from the store.
fn swept(l: &mut Lessor) {
    while l.compact_step(usize::MAX).unwrap() > 0 {}
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct MKv {
    value: Vec<u8>,
    create: i64,
    modr: i64,
    version: i64,
    lease: i64,
}

type State = BTreeMap<Vec<u8>, MKv>;

/// One change in a revision, in order: the key and what it became.
type Change = (Vec<u8>, Option<MKv>);

#[derive(Debug, Clone)]
enum KRange {
    One(usize),
    Prefix(usize),
    From(usize),
    Between(usize, usize),
}

impl KRange {
    fn key_end(&self) -> (Vec<u8>, Vec<u8>) {
        match *self {
            KRange::One(k) => (KEYS[k].to_vec(), vec![]),
            KRange::Prefix(k) => {
                let mut end = KEYS[k].to_vec();
                *end.last_mut().unwrap() += 1;
                (KEYS[k].to_vec(), end)
            }
            KRange::From(k) => (KEYS[k].to_vec(), vec![0]),
            KRange::Between(a, b) => (KEYS[a].to_vec(), KEYS[b].to_vec()),
        }
    }

    fn holds(&self, key: &[u8]) -> bool {
        let (k, end) = self.key_end();
        match &end[..] {
            [] => key == &k[..],
            [0] => key >= &k[..],
            e => key >= &k[..] && key < e,
        }
    }
}

fn krange() -> impl Strategy<Value = KRange> {
    let k = 0..KEYS.len();
    prop_oneof![
        3 => k.clone().prop_map(KRange::One),
        1 => k.clone().prop_map(KRange::Prefix),
        1 => k.clone().prop_map(KRange::From),
        1 => (k.clone(), k).prop_map(|(a, b)| KRange::Between(a, b)),
    ]
}

#[derive(Debug, Clone)]
enum TOp {
    Put(usize, u8, bool),
    Del(KRange),
    Get(KRange),
}

#[derive(Debug, Clone)]
enum Step {
    Put {
        key: usize,
        value: u8,
        lease: bool,
        ignore_value: bool,
    },
    Delete(KRange, bool),
    Txn {
        cmp: Vec<(KRange, u8, i64, u8)>,
        then: Vec<TOp>,
        otherwise: Vec<TOp>,
    },
    Read {
        range: KRange,
        back: i64,
        limit: i64,
        sort: u8,
        target: u8,
        keys_only: bool,
        count_only: bool,
        min_mod: i64,
    },
    Grant(i64),
    Expire,
    Compact(i64),
    /// One step of the compaction's sweep, of about this many versions.
    Sweep(usize),
    Watch {
        range: KRange,
        back: i64,
        prev_kv: bool,
        filter: u8,
    },
    Restart,
}

fn top() -> impl Strategy<Value = TOp> {
    prop_oneof![
        2 => (0..KEYS.len(), any::<u8>(), any::<bool>()).prop_map(|(k, v, l)| TOp::Put(k, v, l)),
        1 => krange().prop_map(TOp::Del),
        1 => krange().prop_map(TOp::Get),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (0..KEYS.len(), any::<u8>(), any::<bool>(), prop::bool::weighted(0.1))
            .prop_map(|(key, value, lease, ignore_value)| Step::Put { key, value, lease, ignore_value }),
        2 => (krange(), any::<bool>()).prop_map(|(r, p)| Step::Delete(r, p)),
        3 => (prop::collection::vec((krange(), 0u8..5, 0i64..12, 0u8..4), 0..3),
              prop::collection::vec(top(), 0..4), prop::collection::vec(top(), 0..3))
            .prop_map(|(cmp, then, otherwise)| Step::Txn { cmp, then, otherwise }),
        4 => (krange(), 0i64..15, 0i64..4, 0u8..3, 0u8..5, any::<bool>(), prop::bool::weighted(0.2), 0i64..6)
            .prop_map(|(range, back, limit, sort, target, keys_only, count_only, min_mod)|
                Step::Read { range, back, limit, sort, target, keys_only, count_only, min_mod }),
        1 => (1i64..4).prop_map(Step::Grant),
        1 => Just(Step::Expire),
        1 => (0i64..10).prop_map(Step::Compact),
        1 => (1usize..4).prop_map(Step::Sweep),
        1 => (krange(), 0i64..12, any::<bool>(), 0u8..3)
            .prop_map(|(range, back, prev_kv, filter)| Step::Watch { range, back, prev_kv, filter }),
        1 => Just(Step::Restart),
    ]
}

struct Model {
    /// The keyspace at each revision (index = revision; 0 unused).
    states: Vec<State>,
    /// The changes of each revision, in order.
    changes: Vec<Vec<Change>>,
    compacted: i64,
    /// Live leases (ids in grant order).
    leases: Vec<i64>,
}

impl Model {
    fn rev(&self) -> i64 {
        self.states.len() as i64 - 1
    }
    fn cur(&self) -> &State {
        self.states.last().unwrap()
    }
    /// Commits staged changes as one revision (none: no revision).
    fn commit(&mut self, next: State, changes: Vec<Change>) {
        if !changes.is_empty() {
            self.states.push(next);
            self.changes.push(changes);
        }
    }
}

fn put_into(
    state: &mut State,
    changes: &mut Vec<Change>,
    rev: i64,
    key: &[u8],
    value: Vec<u8>,
    lease: i64,
) {
    let kv = match state.get(key) {
        Some(old) => MKv {
            value,
            create: old.create,
            modr: rev,
            version: old.version + 1,
            lease,
        },
        None => MKv {
            value,
            create: rev,
            modr: rev,
            version: 1,
            lease,
        },
    };
    state.insert(key.to_vec(), kv.clone());
    changes.push((key.to_vec(), Some(kv)));
}

fn delete_from(state: &mut State, changes: &mut Vec<Change>, r: &KRange) -> Vec<(Vec<u8>, MKv)> {
    let doomed: Vec<(Vec<u8>, MKv)> = state
        .iter()
        .filter(|(k, _)| r.holds(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, _) in &doomed {
        state.remove(k);
        changes.push((k.clone(), None));
    }
    doomed
}

fn kvs(resp: &[(edge_lease_core::Key, edge_lease_core::Entry)]) -> Vec<(Vec<u8>, MKv)> {
    resp.iter()
        .map(|(k, e)| {
            (
                k.to_vec(),
                MKv {
                    value: e.value.to_vec(),
                    create: e.create_revision,
                    modr: e.mod_revision,
                    version: e.version,
                    lease: e.lease,
                },
            )
        })
        .collect()
}

fn cmp_target(t: u8, v: i64) -> CompareTarget {
    match t {
        0 => CompareTarget::Version(v),
        1 => CompareTarget::Create(v),
        2 => CompareTarget::Mod(v),
        3 => CompareTarget::Value(vec![v as u8]),
        _ => CompareTarget::Lease(0),
    }
}

fn cmp_result(r: u8) -> CompareResult {
    [
        CompareResult::Equal,
        CompareResult::Greater,
        CompareResult::Less,
        CompareResult::NotEqual,
    ][r as usize]
}

fn model_holds(state: &State, r: &KRange, t: u8, v: i64, res: u8) -> bool {
    let hits: Vec<&MKv> = state
        .iter()
        .filter(|(k, _)| r.holds(k))
        .map(|(_, v)| v)
        .collect();
    let check = |kv: &MKv| {
        let ord = match t {
            0 => kv.version.cmp(&v),
            1 => kv.create.cmp(&v),
            2 => kv.modr.cmp(&v),
            3 => kv.value.cmp(&vec![v as u8]),
            _ => kv.lease.cmp(&0),
        };
        match res {
            0 => ord.is_eq(),
            1 => ord.is_gt(),
            2 => ord.is_lt(),
            _ => ord.is_ne(),
        }
    };
    if hits.is_empty() {
        if t == 3 {
            return false;
        }
        return check(&MKv {
            value: vec![],
            create: 0,
            modr: 0,
            version: 0,
            lease: 0,
        });
    }
    hits.into_iter().all(check)
}

/// Whether etcd refuses this branch as writing one key twice. A from-key
/// delete covers no put (etcd 3.4 checks the empty interval [key, "\0")).
fn duplicate(ops: &[TOp]) -> bool {
    let puts: Vec<usize> = ops
        .iter()
        .filter_map(|o| {
            if let TOp::Put(k, ..) = o {
                Some(*k)
            } else {
                None
            }
        })
        .collect();
    let dels: Vec<&KRange> = ops
        .iter()
        .filter_map(|o| if let TOp::Del(r) = o { Some(r) } else { None })
        .collect();
    puts.iter().enumerate().any(|(i, k)| {
        puts[..i].contains(k)
            || dels
                .iter()
                .any(|r| !matches!(r, KRange::From(_)) && r.holds(KEYS[*k]))
    })
}

/// An event as a watcher got it: revision, key, entry (None: delete), prev.
type MEvent = (i64, Vec<u8>, Option<MKv>, Option<MKv>);

struct MWatch {
    id: i64,
    range: KRange,
    start: i64,
    prev_kv: bool,
    filter: u8,
    got: Vec<MEvent>,
    compacted: Option<i64>,
    /// The compaction point when it started: the changes it replays from
    /// history have no prev_kv before it, as in etcd.
    history_from: i64,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn keyspace_matches_model_at_every_revision(steps in prop::collection::vec(step(), 1..60)) {
        let config = Config { history: i64::MAX, ..Default::default() };
        let store = MemStore::default();
        let mut l = Lessor::with_storage(config.clone(), Box::new(store.clone())).unwrap();
        let mut m = Model { states: vec![State::new(), State::new()], changes: vec![vec![], vec![]], compacted: -1, leases: vec![] };
        let mut now = T0;
        let mut watches: Vec<MWatch> = Vec::new();
        for step in steps {
            match step {
                Step::Put { key, value, lease, ignore_value } => {
                    let lease_id = if lease { m.leases.last().copied().unwrap_or(0) } else { 0 };
                    let opts = PutOptions { lease: lease_id, prev: true, ignore_value, ..Default::default() };
                    let r = l.put(now, KEYS[key], &[value], opts);
                    let old = m.cur().get(KEYS[key]).cloned();
                    if ignore_value && old.is_none() {
                        prop_assert_eq!(r.map_err(|e| e.code()), Err("KeyNotFound"));
                        continue;
                    }
                    let r = r.unwrap();
                    let rev = m.rev() + 1;
                    prop_assert_eq!(r.revision, rev);
                    prop_assert_eq!(r.prev.map(|e| e.value.to_vec()), old.as_ref().map(|o| o.value.clone()));
                    let value = if ignore_value { old.unwrap().value } else { vec![value] };
                    let mut next = m.cur().clone();
                    let mut ch = vec![];
                    put_into(&mut next, &mut ch, rev, KEYS[key], value, lease_id);
                    m.commit(next, ch);
                }
                Step::Delete(r, prev) => {
                    let (key, range_end) = r.key_end();
                    let got = l.delete_range(now, &DeleteRequest { key, range_end, prev_kv: prev }).unwrap();
                    let mut next = m.cur().clone();
                    let mut ch = vec![];
                    let doomed = delete_from(&mut next, &mut ch, &r);
                    prop_assert_eq!(got.deleted, doomed.len() as i64);
                    prop_assert_eq!(kvs(&got.prev_kvs), if prev { doomed } else { vec![] });
                    m.commit(next, ch);
                    prop_assert_eq!(got.revision, m.rev());
                }
                Step::Txn { cmp, then, otherwise } => {
                    let compare: Vec<Compare> = cmp.iter().map(|(r, t, v, res)| {
                        let (key, range_end) = r.key_end();
                        Compare { key, range_end, target: cmp_target(*t, *v), result: cmp_result(*res) }
                    }).collect();
                    let to_op = |o: &TOp| match o {
                        TOp::Put(k, v, prev) => Op::Put(PutRequest { key: KEYS[*k].to_vec(), value: vec![*v], options: PutOptions { prev: *prev, ..Default::default() } }),
                        TOp::Del(r) => { let (key, range_end) = r.key_end(); Op::Delete(DeleteRequest { key, range_end, prev_kv: true }) }
                        TOp::Get(r) => { let (key, range_end) = r.key_end(); Op::Range(RangeRequest { key, range_end, ..Default::default() }) }
                    };
                    let req = TxnRequest { compare, success: then.iter().map(to_op).collect(), failure: otherwise.iter().map(to_op).collect() };
                    let got = l.txn(now, &req);
                    if duplicate(&then) || duplicate(&otherwise) {
                        prop_assert_eq!(got.map_err(|e| e.code()), Err("DuplicateKey"));
                        continue;
                    }
                    let got = got.unwrap();
                    let ok = cmp.iter().all(|(r, t, v, res)| model_holds(m.cur(), r, *t, *v, *res));
                    prop_assert_eq!(got.succeeded, ok);
                    let ops = if ok { &then } else { &otherwise };
                    let rev = m.rev() + 1;
                    let mut next = m.cur().clone();
                    let mut ch = vec![];
                    for (op, resp) in ops.iter().zip(&got.responses) {
                        match (op, resp) {
                            (TOp::Put(k, v, prev), OpResponse::Put(p)) => {
                                let old = next.get(KEYS[*k]).map(|o| o.value.clone());
                                prop_assert_eq!(p.prev.as_ref().map(|e| e.value.to_vec()), if *prev { old } else { None });
                                prop_assert_eq!(p.revision, rev);
                                put_into(&mut next, &mut ch, rev, KEYS[*k], vec![*v], 0);
                            }
                            (TOp::Del(r), OpResponse::Delete(d)) => {
                                let doomed = delete_from(&mut next, &mut ch, r);
                                prop_assert_eq!(kvs(&d.prev_kvs), doomed);
                            }
                            (TOp::Get(r), OpResponse::Range(g)) => {
                                let want: Vec<(Vec<u8>, MKv)> = next.iter().filter(|(k, _)| r.holds(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                                prop_assert_eq!(kvs(&g.kvs), want);
                                prop_assert_eq!(g.revision, m.rev() + (!ch.is_empty()) as i64);
                            }
                            _ => prop_assert!(false, "response kind does not match op"),
                        }
                    }
                    prop_assert_eq!(got.responses.len(), ops.len());
                    m.commit(next, ch);
                    prop_assert_eq!(got.revision, m.rev());
                }
                Step::Read { range, back, limit, sort, target, keys_only, count_only, min_mod } => {
                    let rev = (m.rev() - back).max(1);
                    let (key, range_end) = range.key_end();
                    let sort_order = [SortOrder::None, SortOrder::Ascend, SortOrder::Descend][sort as usize];
                    let sort_target = [SortTarget::Key, SortTarget::Version, SortTarget::Create, SortTarget::Mod, SortTarget::Value][target as usize];
                    let req = RangeRequest { key, range_end, revision: rev, limit, sort_order, sort_target, keys_only, count_only, min_mod_revision: min_mod, ..Default::default() };
                    let got = l.range_kv(now, &req);
                    if rev < m.compacted {
                        prop_assert_eq!(got.map_err(|e| e.code()), Err("Compacted"));
                        continue;
                    }
                    let got = got.unwrap();
                    let all: Vec<(Vec<u8>, MKv)> = m.states[rev as usize].iter().filter(|(k, _)| range.holds(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                    prop_assert_eq!(got.count, all.len() as i64);
                    prop_assert_eq!(got.revision, m.rev());
                    if count_only {
                        prop_assert!(got.kvs.is_empty());
                        continue;
                    }
                    let mut want: Vec<(Vec<u8>, MKv)> = all.into_iter().filter(|(_, v)| min_mod == 0 || v.modr >= min_mod).collect();
                    // etcd: with no sort order and no filter, only the first
                    // limit + 1 keys (in key order) are read, then sorted.
                    if sort_order == SortOrder::None && min_mod == 0 && limit > 0 {
                        want.truncate(limit as usize + 1);
                    }
                    let order = if sort_target != SortTarget::Key && sort_order == SortOrder::None { SortOrder::Ascend } else { sort_order };
                    if order != SortOrder::None {
                        // Stable: equal values keep key order, in either direction.
                        want.sort_by(|(ka, a), (kb, b)| {
                            let by = match sort_target {
                                SortTarget::Key => ka.cmp(kb),
                                SortTarget::Version => a.version.cmp(&b.version),
                                SortTarget::Create => a.create.cmp(&b.create),
                                SortTarget::Mod => a.modr.cmp(&b.modr),
                                SortTarget::Value => a.value.cmp(&b.value),
                            };
                            if order == SortOrder::Descend { by.reverse() } else { by }
                        });
                    }
                    let more = limit > 0 && want.len() > limit as usize;
                    if more { want.truncate(limit as usize); }
                    if keys_only { for (_, v) in &mut want { v.value.clear(); } }
                    prop_assert_eq!(got.more, more);
                    prop_assert_eq!(kvs(&got.kvs), want);
                }
                Step::Grant(ttl) => {
                    let g = l.grant(now, ttl, 0).unwrap();
                    m.leases.push(g.id);
                }
                Step::Expire => {
                    // The oldest lease expires: its keys go in one revision.
                    now += 5_000;
                    let t = l.tick(now);
                    let mut next = m.cur().clone();
                    let mut rev_changes = vec![];
                    for r in &t.expired {
                        let mut ch = vec![];
                        let doomed: Vec<Vec<u8>> = next.iter().filter(|(_, v)| v.lease == r.id).map(|(k, _)| k.clone()).collect();
                        for k in &doomed { next.remove(k); ch.push((k.clone(), None)); }
                        prop_assert_eq!(r.keys.iter().map(|k| k.to_vec()).collect::<Vec<_>>(), doomed);
                        if !ch.is_empty() { rev_changes.push((next.clone(), ch)); }
                    }
                    m.leases.clear();
                    for (state, ch) in rev_changes { m.commit(state, ch); }
                    prop_assert_eq!(l.revision(), m.rev());
                }
                Step::Compact(back) => {
                    let rev = m.rev() - back;
                    let got = l.compact(rev);
                    // (-1 until the first compaction, as etcd's: 0 is one.)
                    if rev <= m.compacted {
                        prop_assert_eq!(got.map_err(|e| e.code()), Err("Compacted"));
                    } else {
                        prop_assert_eq!(got, Ok(m.rev()));
                        m.compacted = rev;
                    }
                }
                Step::Sweep(max) => {
                    let before = store.0.borrow().len();
                    let left = l.compact_step(max).unwrap();
                    prop_assert_eq!(left, l.compaction_pending());
                    // (A step's deletes: at most `max` versions.)
                    prop_assert!(before - store.0.borrow().len() <= max);
                }
                Step::Restart => {
                    let entries: Vec<(String, Vec<u8>)> = store.0.borrow().clone().into_iter().collect();
                    l = Lessor::restore(config.clone(), entries, now, Some(Box::new(store.clone()))).unwrap();
                    // Watchers do not survive a restart: check them now.
                    check_watches(&watches, &m)?;
                    watches.clear();
                }
                Step::Watch { range, back, prev_kv, filter } => {
                    let start = (m.rev() - back).max(0);
                    let (key, range_end) = range.key_end();
                    let req = WatchRequest { key, range_end, start_revision: start, prev_kv, no_put: filter == 1, no_delete: filter == 2 };
                    match l.watch(&req) {
                        Ok(id) => watches.push(MWatch { id, range, start: if start == 0 { m.rev() + 1 } else { start }, prev_kv, filter, got: vec![], compacted: None, history_from: m.compacted }),
                        Err(e) => {
                            let (k, end) = range.key_end();
                            prop_assert!(!end.is_empty() && end != [0] && end <= k, "watch refused: {:?}", e);
                        }
                    }
                }
            }
            prop_assert_eq!(l.revision(), m.rev());
            for (batch, events) in poll(&mut l) {
                let w = watches.iter_mut().find(|w| w.id == batch.id).unwrap();
                prop_assert!(w.compacted.is_none(), "events after a compaction cancel");
                if batch.compact_revision != 0 {
                    w.compacted = Some(batch.compact_revision);
                }
                for ev in events {
                    let kv = ev.entry.map(|e| MKv { value: e.value.to_vec(), create: e.create_revision, modr: e.mod_revision, version: e.version, lease: e.lease });
                    let prev = ev.prev.map(|e| MKv { value: e.value.to_vec(), create: e.create_revision, modr: e.mod_revision, version: e.version, lease: e.lease });
                    w.got.push((ev.revision, ev.key.to_vec(), kv, prev));
                }
            }
            prop_assert!(!l.watches_pending());
        }
        check_watches(&watches, &m)?;
        // The versions held: every change after the compaction point, and of
        // those at or before it each key's last, unless a deletion (etcd's
        // keyIndex.compact), in commit order.
        let mut last = BTreeMap::new();
        for (rev, changes) in m.changes.iter().enumerate().take(m.compacted.max(0) as usize + 1) {
            for (sub, (key, _)) in changes.iter().enumerate() {
                last.insert(key.clone(), (rev as i64, sub as u32));
            }
        }
        let mut want = Vec::new();
        for (rev, changes) in m.changes.iter().enumerate() {
            for (sub, (key, kv)) in changes.iter().enumerate() {
                let at = (rev as i64, sub as u32);
                if rev as i64 > m.compacted || (last.get(key) == Some(&at) && kv.is_some()) {
                    want.push((at.0, at.1, key.clone(), kv.as_ref().map(|kv| (kv.value.clone(), kv.create, kv.modr, kv.version, kv.lease))));
                }
            }
        }
        let got: Vec<_> = l.versions(m.rev()).into_iter().map(|(rev, sub, key, e)| {
            (rev, sub, key.to_vec(), e.map(|e| (e.value.to_vec(), e.create_revision, e.mod_revision, e.version, e.lease)))
        }).collect();
        prop_assert_eq!(&got, &want);
        // The same, read back from etcd's key bucket layout.
        #[cfg(feature = "etcd")]
        let whole = l.etcd_key_bucket();
        #[cfg(feature = "etcd")]
        prop_assert_eq!(etcd_records(&whole), want.clone());
        // Swept to its end, the compaction has dropped from memory and from
        // the store exactly what it left unreadable: the store holds the
        // versions a snapshot names, and the lessor the bytes of one
        // restored from it.
        swept(&mut l);
        prop_assert_eq!(l.compaction_pending(), 0);
        let snap = l.snapshot(T0);
        let old_of = |entries: &mut dyn Iterator<Item = String>| -> Vec<String> {
            let mut v: Vec<String> = entries.filter(|k| k.starts_with("v1/old/")).collect();
            v.sort();
            v
        };
        prop_assert_eq!(
            old_of(&mut store.0.borrow().keys().cloned()),
            old_of(&mut snap.iter().map(|(k, _)| k.clone()))
        );
        let restored = Lessor::restore(config.clone(), snap, now, None).unwrap();
        prop_assert_eq!(restored.size_bytes(), l.size_bytes());
        prop_assert_eq!(l.versions(m.rev()).len(), want.len());
        // Read in pieces: the same bytes, each piece within its bound
        // unless a single record, and the heads naming each record's key and
        // value length.
        #[cfg(feature = "etcd")]
        for max in [1, 100, 4096] {
            let mut cursor = l.etcd_key_bucket_cursor();
            let heads = cursor.take_heads();
            let mut read = Vec::new();
            loop {
                let piece = l.etcd_key_bucket_next(&mut cursor, max).unwrap();
                if piece.is_empty() {
                    break;
                }
                prop_assert!(piece.len() <= max || records(&piece).len() == 1);
                read.extend_from_slice(&piece);
            }
            prop_assert_eq!(&read, &whole);
            let want_heads: Vec<_> = records(&whole).into_iter().map(|(k, v)| (k.to_vec(), v.len())).collect();
            let got_heads: Vec<_> = heads_of(&heads);
            prop_assert_eq!(got_heads, want_heads);
        }
    }
}

#[cfg(feature = "etcd")]
type Version = (i64, u32, Vec<u8>, Option<(Vec<u8>, i64, i64, i64, i64)>);

#[cfg(feature = "etcd")]
fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

#[cfg(feature = "etcd")]
/// The (key, value) records of a packed key bucket piece.
fn records(b: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let k = u32_at(b, at);
        let n = u32_at(b, at + 4 + k);
        out.push((&b[at + 4..at + 4 + k], &b[at + 8 + k..at + 8 + k + n]));
        at += 8 + k + n;
    }
    out
}

#[cfg(feature = "etcd")]
/// The (key, value length) of each record of the key bucket's heads.
fn heads_of(b: &[u8]) -> Vec<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let k = u32_at(b, at);
        out.push((b[at + 4..at + 4 + k].to_vec(), u32_at(b, at + 4 + k)));
        at += 8 + k;
    }
    out
}

#[cfg(feature = "etcd")]
/// The records of etcd's key bucket, packed (`etcd_key_bucket`), decoded:
/// the key is `rev_sub` (8 bytes big-endian each, "t" after a deletion),
/// the value an mvccpb.KeyValue (key 1, create 2, mod 3, version 4, value
/// 5, lease 6).
fn etcd_records(mut packed: &[u8]) -> Vec<Version> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> &'a [u8] {
        let (head, rest) = b.split_at(n);
        *b = rest;
        head
    }
    fn len(b: &mut &[u8]) -> usize {
        u32::from_le_bytes(take(b, 4).try_into().unwrap()) as usize
    }
    fn uvarint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..).step_by(7) {
            let byte = take(b, 1)[0];
            v |= ((byte & 0x7f) as u64) << shift;
            if byte < 0x80 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !packed.is_empty() {
        let n = len(&mut packed);
        let k = take(&mut packed, n);
        assert!(k.len() == 17 || (k.len() == 18 && k[17] == b't'), "{k:?}");
        assert_eq!(k[8], b'_');
        let rev = i64::from_be_bytes(k[..8].try_into().unwrap());
        let sub = i64::from_be_bytes(k[9..17].try_into().unwrap()) as u32;
        let n = len(&mut packed);
        let mut v = take(&mut packed, n);
        let (mut key, mut value, mut nums) = (Vec::new(), Vec::new(), [0i64; 7]);
        while !v.is_empty() {
            let tag = take(&mut v, 1)[0];
            if tag & 7 == 2 {
                let n = uvarint(&mut v) as usize;
                let b = take(&mut v, n).to_vec();
                if tag >> 3 == 1 {
                    key = b
                } else {
                    value = b
                }
            } else {
                nums[(tag >> 3) as usize] = uvarint(&mut v) as i64;
            }
        }
        let kv = (k.len() == 17).then_some((value, nums[2], nums[3], nums[4], nums[6]));
        out.push((rev, sub, key, kv));
    }
    out
}

/// Each watcher's batch of a poll, with its events.
fn poll(l: &mut Lessor) -> Vec<(WatchEvents, Vec<Event>)> {
    let p = l.poll_watches();
    p.batches
        .iter()
        .map(|b| (b.clone(), p.events_of(b).cloned().collect()))
        .collect()
}

/// Every watcher saw exactly the model's changes in its range from its
/// start, in order (within a revision, in op order, also when replayed from
/// history a restart restored), or was cancelled because its start was
/// compacted; one that starts at the compaction point, as etcd's.
fn check_watches(watches: &[MWatch], m: &Model) -> Result<(), TestCaseError> {
    for w in watches {
        if let Some(c) = w.compacted {
            prop_assert!(w.start < c);
            prop_assert!(w.got.is_empty());
            continue;
        }
        let mut want = vec![];
        for rev in w.start.max(2)..=m.rev() {
            let changes = &m.changes[rev as usize];
            for (i, (k, kv)) in changes.iter().enumerate() {
                // A watch from the compaction point sees, at that revision,
                // only each key's last change, and no deletion: etcd's
                // compaction keeps no more of it.
                if rev == w.history_from
                    && (kv.is_none() || changes[i + 1..].iter().any(|(k2, _)| k2 == k))
                {
                    continue;
                }
                if !w.range.holds(k)
                    || (kv.is_some() && w.filter == 1)
                    || (kv.is_none() && w.filter == 2)
                {
                    continue;
                }
                let prev = if w.prev_kv
                    && kv.as_ref().is_none_or(|v| v.version > 1)
                    && rev > w.history_from
                {
                    m.states[rev as usize - 1].get(k).cloned()
                } else {
                    None
                };
                want.push((rev, k.clone(), kv.clone(), prev));
            }
        }
        prop_assert_eq!(&w.got, &want, "watch {} from {}", w.id, w.start);
    }
    Ok(())
}

#[test]
fn errors_for_future_and_compacted_revisions() {
    let mut l = Lessor::new(Config::default()).unwrap();
    for v in 0..5u8 {
        l.put(T0, b"k", &[v], PutOptions::default()).unwrap();
    }
    assert_eq!(l.revision(), 6);
    let at = |rev| RangeRequest {
        key: b"k".to_vec(),
        revision: rev,
        ..Default::default()
    };
    assert_eq!(l.range_kv(T0, &at(7)), Err(Error::FutureRevision));
    assert_eq!(l.range_kv(T0, &at(3)).unwrap().kvs[0].1.value[..], [1]);
    assert_eq!(l.compact(7), Err(Error::FutureRevision));
    assert_eq!(l.compact(4), Ok(6));
    assert_eq!(l.compact(4), Err(Error::Compacted(4)));
    assert_eq!(l.range_kv(T0, &at(3)), Err(Error::Compacted(4)));
    assert_eq!(l.range_kv(T0, &at(4)).unwrap().kvs[0].1.value[..], [2]);
}

// etcd's compaction point is -1 until the first compaction, so compacting
// at 0 is one (once), and a txn's range at a negative revision is refused
// when it is below the point (checkRequestRange), even on a fresh store;
// the point survives a restart.
#[test]
fn the_compaction_point_starts_at_minus_one_as_etcds() {
    let store = MemStore::default();
    let mut l = Lessor::with_storage(Config::default(), Box::new(store.clone())).unwrap();
    let range_at = |rev| TxnRequest {
        compare: vec![],
        success: vec![Op::Range(RangeRequest {
            key: b"k".to_vec(),
            revision: rev,
            ..Default::default()
        })],
        failure: vec![],
    };
    assert_eq!(l.compacted(), -1);
    assert!(l.txn(T0, &range_at(-1)).is_ok());
    assert_eq!(l.txn(T0, &range_at(-2)), Err(Error::Compacted(-1)));
    l.put(T0, b"k", b"v", PutOptions::default()).unwrap();
    assert_eq!(l.compact(-1), Err(Error::Compacted(-1)));
    assert_eq!(l.compact(0), Ok(2));
    assert_eq!(l.compact(0), Err(Error::Compacted(0)));
    assert_eq!(l.txn(T0, &range_at(-1)), Err(Error::Compacted(0)));
    // Revision 0 is the current one, never compacted; so is a negative one
    // outside a txn.
    let got = l.txn(T0, &range_at(0)).unwrap();
    assert_eq!(got.responses.len(), 1);
    let top = RangeRequest {
        key: b"k".to_vec(),
        revision: -5,
        ..Default::default()
    };
    assert_eq!(l.range_kv(T0, &top).unwrap().kvs.len(), 1);
    let entries: Vec<(String, Vec<u8>)> = store.0.borrow().clone().into_iter().collect();
    let mut l = Lessor::restore(
        Config::default(),
        entries,
        T0,
        Some(Box::new(store.clone())),
    )
    .unwrap();
    assert_eq!(l.compacted(), 0);
    assert_eq!(l.compact(0), Err(Error::Compacted(0)));
    assert_eq!(l.txn(T0, &range_at(-1)), Err(Error::Compacted(0)));
}

#[test]
fn history_is_kept_for_the_configured_revisions_only() {
    let mut l = Lessor::new(Config {
        history: 8,
        ..Default::default()
    })
    .unwrap();
    for v in 0..100u8 {
        l.put(T0, b"k", &[v], PutOptions::default()).unwrap();
        let rev = l.revision();
        // At least `history` revisions back are readable at all times.
        let old = RangeRequest {
            key: b"k".to_vec(),
            revision: rev - 8,
            ..Default::default()
        };
        if rev - 8 >= 2 {
            assert_eq!(l.range_kv(T0, &old).unwrap().kvs[0].1.value[..], [v - 8]);
        }
    }
    let first = RangeRequest {
        key: b"k".to_vec(),
        revision: 2,
        ..Default::default()
    };
    assert!(matches!(l.range_kv(T0, &first), Err(Error::Compacted(_))));
}

// Writes that change many keys each: the versions `history` lets go are
// swept with the writes (more per write than each adds), so history stays
// bounded with no sweep steps from the host.
#[test]
fn history_stays_bounded_under_writes_of_many_keys_without_host_steps() {
    let history = 100;
    let mut l = Lessor::new(Config {
        history,
        ..Default::default()
    })
    .unwrap();
    let keys = 64;
    let all = |v: u32| TxnRequest {
        compare: vec![],
        success: (0..keys)
            .map(|k| {
                Op::Put(PutRequest {
                    key: format!("k{k}").into_bytes(),
                    value: v.to_le_bytes().to_vec(),
                    options: PutOptions::default(),
                })
            })
            .collect(),
        failure: vec![],
    };
    let mut most = 0;
    for v in 0..2000u32 {
        l.txn(T0, &all(v)).unwrap();
        most = most.max(l.compaction_pending());
    }
    // A compaction every quarter of `history` leaves that many revisions'
    // changes to sweep, and each write sweeps twice what it adds.
    let quarter = (history as usize / 4) * keys;
    assert!(most <= 2 * quarter, "{most} changes left to sweep at most");
    // Held: at most the revisions kept and the ones waiting for the sweep
    // (each version costs 64 bytes, its key of at most 3 and its value of 4).
    let versions = (history as usize + 2 * history as usize / 4 + 1) * keys;
    assert!(
        l.size_bytes() <= versions * (64 + 3 + 4),
        "{} bytes held",
        l.size_bytes()
    );
}

#[test]
fn automatic_compaction_waits_for_watchers() {
    let mut l = Lessor::new(Config {
        history: 2,
        ..Default::default()
    })
    .unwrap();
    let id = l
        .watch(&WatchRequest {
            key: b"k".to_vec(),
            ..Default::default()
        })
        .unwrap();
    for v in 0..20u8 {
        l.put(T0, b"k", &[v], PutOptions::default()).unwrap();
    }
    let got = poll(&mut l);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0.id, id);
    assert_eq!(
        got[0].1.len(),
        20,
        "no change dropped before the watcher had it"
    );
    // It held the point one short of the revision it wanted first (2).
    assert_eq!(l.compacted(), 1);
    // One that wants revision 1 on holds it where etcd starts it (-1), not
    // at a revision 0 that holds nothing.
    let mut l = Lessor::new(Config {
        history: 2,
        ..Default::default()
    })
    .unwrap();
    l.watch(&WatchRequest {
        key: b"k".to_vec(),
        start_revision: 1,
        ..Default::default()
    })
    .unwrap();
    for v in 0..20u8 {
        l.put(T0, b"k", &[v], PutOptions::default()).unwrap();
    }
    assert_eq!(l.compacted(), -1);
}

#[test]
fn compaction_is_stored_and_history_survives_a_restart() {
    let config = Config {
        history: 4,
        ..Default::default()
    };
    let store = MemStore::default();
    let mut l = Lessor::with_storage(config.clone(), Box::new(store.clone())).unwrap();
    for v in 0..50u8 {
        l.put(T0, &[b'k', v % 3], &[v], PutOptions::default())
            .unwrap();
        if v % 7 == 0 {
            l.delete(T0, &[b'k', (v + 1) % 3], false).unwrap();
        }
    }
    let rev = l.revision();
    let entries: Vec<(String, Vec<u8>)> = store.0.borrow().clone().into_iter().collect();
    // Old versions are dropped from the store as history is compacted.
    let old = entries
        .iter()
        .filter(|(k, _)| k.starts_with("v1/old/"))
        .count();
    assert!(old <= 12, "{old} old versions stored");
    let mut back = Lessor::restore(config, entries, T0, None).unwrap();
    for at in rev - 4..=rev {
        let req = RangeRequest {
            key: b"k".to_vec(),
            range_end: b"l".to_vec(),
            revision: at,
            ..Default::default()
        };
        assert_eq!(back.range_kv(T0, &req), l.range_kv(T0, &req), "at {at}");
    }
    let start = WatchRequest {
        key: b"k".to_vec(),
        range_end: b"l".to_vec(),
        start_revision: rev - 3,
        prev_kv: true,
        ..Default::default()
    };
    back.watch(&start).unwrap();
    l.watch(&start).unwrap();
    assert_eq!(poll(&mut back), poll(&mut l));
}

#[test]
fn compaction_drops_each_version_once() {
    #[derive(Clone, Default)]
    struct Batches(Rc<RefCell<Vec<Batch>>>);
    impl Storage for Batches {
        fn write(&mut self, batch: &Batch) -> Result<(), String> {
            self.0.borrow_mut().push(batch.clone());
            Ok(())
        }
    }
    let rec = Batches::default();
    let config = Config {
        history: 40,
        ..Default::default()
    };
    let mut l = Lessor::with_storage(config, Box::new(rec.clone())).unwrap();
    for v in 0..200u32 {
        l.put(T0, b"hot", &v.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    let batches = rec.0.borrow();
    let mut dropped = 0;
    for b in batches.iter() {
        let mut d: Vec<&str> = b.deletes().collect();
        d.sort();
        d.dedup();
        assert_eq!(
            d.len(),
            b.deletes().count(),
            "a version dropped twice in one batch"
        );
        dropped += d.len();
    }
    // Every version older than the kept history went, once.
    assert!(dropped >= 200 - 40 - 11, "{dropped}");
}

/// A txn that deletes from a key on and puts a key there changes that key
/// twice (or three times) in one revision, as etcd 3.4 does (checked against
/// a real etcd): responses, reads, watch events with prev_kv (etcd's: the
/// state at the revision before, none for a create), history after a
/// restart (the versions are stored by sub-revision), and compaction.
#[test]
fn txn_changes_a_key_more_than_once_in_one_revision() {
    let config = Config {
        history: i64::MAX,
        ..Default::default()
    };
    let store = MemStore::default();
    let mut l = Lessor::with_storage(config.clone(), Box::new(store.clone())).unwrap();
    let put = |key: &str, value: &str, prev: bool| {
        Op::Put(PutRequest {
            key: key.into(),
            value: value.into(),
            options: PutOptions {
                prev,
                ..Default::default()
            },
        })
    };
    let del_from = |key: &str, prev: bool| {
        Op::Delete(DeleteRequest {
            key: key.into(),
            range_end: vec![0],
            prev_kv: prev,
        })
    };
    let txn = |ops: Vec<Op>| TxnRequest {
        compare: vec![],
        success: ops,
        failure: vec![],
    };
    let value = |e: &edge_lease_core::Entry| String::from_utf8(e.value.to_vec()).unwrap();
    l.put(T0, b"a", b"old", PutOptions::default()).unwrap(); // 2
    l.put(T0, b"b", b"B", PutOptions::default()).unwrap(); // 3
    let all = WatchRequest {
        key: b"a".to_vec(),
        range_end: vec![0],
        prev_kv: true,
        ..Default::default()
    };
    l.watch(&all).unwrap();

    // Delete, then put: the put creates the key anew (no prev_kv).
    let r = l
        .txn(T0, &txn(vec![del_from("a", true), put("a", "new", true)]))
        .unwrap();
    assert_eq!(r.revision, 4);
    let OpResponse::Delete(d) = &r.responses[0] else {
        panic!()
    };
    assert_eq!(d.deleted, 2);
    let OpResponse::Put(p) = &r.responses[1] else {
        panic!()
    };
    assert!(p.created && p.prev.is_none());
    let a = l.get(T0, b"a").unwrap();
    assert_eq!((a.create_revision, a.mod_revision, a.version), (4, 4, 1));

    // Put, then delete: the delete's prev_kvs hold the txn's own put.
    let r = l
        .txn(T0, &txn(vec![put("a", "v2", true), del_from("a", true)]))
        .unwrap();
    let OpResponse::Put(p) = &r.responses[0] else {
        panic!()
    };
    assert_eq!(p.prev.as_ref().map(value).as_deref(), Some("new"));
    let OpResponse::Delete(d) = &r.responses[1] else {
        panic!()
    };
    assert_eq!(d.prev_kvs.len(), 1);
    assert_eq!(
        (
            value(&d.prev_kvs[0].1),
            d.prev_kvs[0].1.version,
            d.prev_kvs[0].1.mod_revision
        ),
        ("v2".into(), 2, 5)
    );
    assert!(l.get(T0, b"a").is_none());

    // Delete, put, delete: three changes of one key in revision 7.
    l.put(T0, b"a", b"old", PutOptions::default()).unwrap(); // 6
    l.txn(
        T0,
        &txn(vec![
            del_from("a", false),
            put("a", "n", false),
            del_from("a", true),
        ]),
    )
    .unwrap();
    assert_eq!(l.revision(), 7);

    // The events, in op order; prev_kv is the state at the revision before.
    let brief =
        |evs: &[edge_lease_core::Event]| -> Vec<(i64, String, Option<String>, Option<String>)> {
            evs.iter()
                .map(|e| {
                    (
                        e.revision,
                        String::from_utf8(e.key.to_vec()).unwrap(),
                        e.entry.as_ref().map(value),
                        e.prev.as_ref().map(value),
                    )
                })
                .collect()
        };
    let s = |x: &str| Some(x.to_string());
    let want = vec![
        (4, "a".into(), None, s("old")),
        (4, "b".into(), None, s("B")),
        (4, "a".into(), s("new"), None),
        (5, "a".into(), s("v2"), s("new")),
        (5, "a".into(), None, s("new")),
        (6, "a".into(), s("old"), None),
        (7, "a".into(), None, s("old")),
        (7, "a".into(), s("n"), None),
        (7, "a".into(), None, s("old")),
    ];
    // Every event a poll hands out, in order; what a new watcher of
    // everything from `start` gets.
    let polled =
        |l: &mut Lessor| -> Vec<_> { poll(l).iter().flat_map(|(_, evs)| brief(evs)).collect() };
    let replay = |l: &mut Lessor, start_revision| {
        l.watch(&WatchRequest {
            start_revision,
            ..all.clone()
        })
        .unwrap();
        polled(l)
    };
    assert_eq!(polled(&mut l), want);

    // Reads at each revision see its final state.
    let at = |l: &mut Lessor, rev: i64| {
        let req = RangeRequest {
            key: b"a".to_vec(),
            revision: rev,
            ..Default::default()
        };
        l.range_kv(T0, &req)
            .unwrap()
            .kvs
            .iter()
            .map(|(_, e)| value(e))
            .collect::<Vec<_>>()
    };
    for (rev, v) in [
        (3, vec!["old"]),
        (4, vec!["new"]),
        (5, vec![]),
        (6, vec!["old"]),
        (7, vec![]),
    ] {
        assert_eq!(at(&mut l, rev), v, "at {rev}");
    }

    // A restart replays the same history (the store keeps each sub-revision).
    let entries: Vec<(String, Vec<u8>)> = store.0.borrow().clone().into_iter().collect();
    assert!(
        entries
            .iter()
            .any(|(k, _)| k == "v1/old/0000000000000007.2/a"),
        "{entries:?}"
    );
    let mut back =
        Lessor::restore(config.clone(), entries, T0, Some(Box::new(store.clone()))).unwrap();
    assert_eq!(replay(&mut back, 4), want);
    for (rev, v) in [(4, vec!["new"]), (5, vec![]), (6, vec!["old"])] {
        assert_eq!(at(&mut back, rev), v, "restored, at {rev}");
    }

    // Compacting to 6 drops revision 4 and 5's versions but the state at 6
    // and after; a restart after it still reads and replays from 6.
    back.compact(6).unwrap();
    swept(&mut back);
    assert_eq!(at(&mut back, 6), vec!["old"]);
    assert_eq!(replay(&mut back, 6), want[5..]);
    let entries: Vec<(String, Vec<u8>)> = store.0.borrow().clone().into_iter().collect();
    assert!(
        !entries
            .iter()
            .any(|(k, _)| k.starts_with("v1/old/0000000000000004")
                || k.starts_with("v1/old/0000000000000005")),
        "{entries:?}"
    );
    let mut again = Lessor::restore(config, entries, T0, None).unwrap();
    assert_eq!(replay(&mut again, 6), want[5..]);

    // A put with ignore_value of a key the txn deleted finds no value to
    // keep: KeyNotFound, nothing changes (etcd 3.4's member panics here).
    let mut l = Lessor::new(Config::default()).unwrap();
    l.put(T0, b"k", b"v", PutOptions::default()).unwrap();
    let keep = Op::Put(PutRequest {
        key: b"k".to_vec(),
        value: vec![],
        options: PutOptions {
            ignore_value: true,
            ..Default::default()
        },
    });
    let r = l.txn(T0, &txn(vec![del_from("k", false), keep]));
    assert_eq!(r.map(|_| ()), Err(Error::KeyNotFound));
    assert_eq!(l.revision(), 2);
    assert_eq!(l.get(T0, b"k").map(value).as_deref(), Some("v"));
}

/// A change many watchers get is one event in a poll (one with prev_kv, one
/// without), named by each watcher's batch; filters still apply per watcher.
#[test]
fn watchers_of_one_change_share_its_event() {
    let mut l = Lessor::new(Config::default()).unwrap();
    let on = |prev_kv, no_put| WatchRequest {
        key: b"k".to_vec(),
        prev_kv,
        no_put,
        ..Default::default()
    };
    let ids: Vec<i64> = [
        on(true, false),
        on(true, false),
        on(false, false),
        on(false, true),
    ]
    .iter()
    .map(|r| l.watch(r).unwrap())
    .collect();
    l.put(T0, b"k", b"1", PutOptions::default()).unwrap();
    l.put(T0, b"k", b"2", PutOptions::default()).unwrap();
    let p = l.poll_watches();
    // Two changes, each with and without prev_kv: four events for three
    // watchers that want them (the fourth filters puts out).
    assert_eq!(p.events.len(), 4);
    assert_eq!(p.batches.len(), 3);
    assert_eq!(p.batches[0].events, p.batches[1].events);
    assert_ne!(p.batches[0].events, p.batches[2].events);
    let values = |b: &WatchEvents| -> Vec<(Vec<u8>, bool)> {
        p.events_of(b)
            .map(|e| (e.entry.as_ref().unwrap().value.to_vec(), e.prev.is_some()))
            .collect()
    };
    assert_eq!(
        values(&p.batches[0]),
        [(b"1".to_vec(), false), (b"2".to_vec(), true)]
    );
    assert_eq!(
        values(&p.batches[2]),
        [(b"1".to_vec(), false), (b"2".to_vec(), false)]
    );
    assert_eq!(p.batches.iter().map(|b| b.id).collect::<Vec<_>>(), ids[..3]);
}

/// Events a watcher filters out are not handed out; a watcher catching up
/// from far back (past the shared window) gets its events all the same.
#[test]
fn filtered_and_far_behind_watchers() {
    let mut l = Lessor::new(Config {
        history: i64::MAX,
        ..Default::default()
    })
    .unwrap();
    let no_put = WatchRequest {
        key: b"k".to_vec(),
        no_put: true,
        ..Default::default()
    };
    l.watch(&no_put).unwrap();
    l.put(T0, b"k", b"v", PutOptions::default()).unwrap();
    let p = l.poll_watches();
    assert!(p.events.is_empty() && p.batches.is_empty(), "{p:?}");

    for v in 0..6000u32 {
        l.put(T0, b"k", &v.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    let rev = l.revision();
    let from = |start_revision| WatchRequest {
        key: b"k".to_vec(),
        start_revision,
        prev_kv: true,
        ..Default::default()
    };
    let far = l.watch(&from(4)).unwrap();
    let near = l.watch(&from(rev - 9)).unwrap();
    let p = l.poll_watches();
    let got = |id| -> Vec<(i64, u32, u32)> {
        let b = p.batches.iter().find(|b| b.id == id).unwrap();
        p.events_of(b)
            .map(|e| {
                let v = |x: &edge_lease_core::Entry| {
                    u32::from_le_bytes(x.value[..].try_into().unwrap())
                };
                (
                    e.revision,
                    v(e.entry.as_ref().unwrap()),
                    v(e.prev.as_ref().unwrap()),
                )
            })
            .collect()
    };
    let want = |revs: std::ops::Range<i64>| -> Vec<(i64, u32, u32)> {
        // Revision r holds v = r - 3 (the first put, "v", was revision 2).
        revs.map(|r| (r, (r - 3) as u32, (r - 4) as u32)).collect()
    };
    assert_eq!(got(far), want(4..1004));
    assert_eq!(got(near), want(rev - 9..rev + 1));
}

// A watcher catching up gets etcd's batches: 1000 revisions that have
// changes in its range (before its filters), however far apart they are.
#[test]
fn catching_up_comes_in_batches_of_1000_revisions_with_changes_in_range() {
    let mut l = Lessor::new(Config {
        history: i64::MAX,
        ..Default::default()
    })
    .unwrap();
    // "a" on every other revision (1224 of them), "b" between; "c" once
    // every 300 revisions.
    for i in 0..2448u32 {
        let key: &[u8] = match i {
            i if i % 300 == 0 => b"c",
            i if i % 2 == 0 => b"a",
            _ => b"b",
        };
        l.put(T0, key, &i.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    let rev = l.revision();
    let watch = |key: &[u8], no_put| WatchRequest {
        key: key.to_vec(),
        start_revision: 1,
        no_put,
        ..Default::default()
    };
    let a = l.watch(&watch(b"a", false)).unwrap();
    let c = l.watch(&watch(b"c", false)).unwrap();
    // Puts only, all filtered out: the revisions count all the same.
    let filtered = l.watch(&watch(b"a", true)).unwrap();
    let mut sizes: std::collections::HashMap<i64, Vec<usize>> = Default::default();
    for _ in 0..4 {
        for (b, _) in poll(&mut l) {
            assert_eq!(b.revision, rev);
            sizes.entry(b.id).or_default().push(b.events.len());
        }
    }
    let a_revs = (0..2448).filter(|i| i % 300 != 0 && i % 2 == 0).count();
    assert_eq!(sizes[&a], [1000, a_revs - 1000]);
    assert_eq!(sizes[&c], [9]);
    assert!(!sizes.contains_key(&filtered));
    assert!(!l.watches_pending());
}

// A batch found over several polls, when a watcher's changes are far
// apart: each poll reads a bounded part of the log, and the batch comes
// whole once found, as etcd sends it.
#[test]
fn a_sparse_batch_far_behind_is_found_over_several_polls_and_comes_whole() {
    let mut l = Lessor::new(Config {
        history: i64::MAX,
        ..Default::default()
    })
    .unwrap();
    l.put(T0, b"z", b"first", PutOptions::default()).unwrap();
    for i in 0..150_000u32 {
        l.put(T0, b"b", &i.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    l.put(T0, b"z", b"second", PutOptions::default()).unwrap();
    let id = l
        .watch(&WatchRequest {
            key: b"z".to_vec(),
            start_revision: 1,
            ..Default::default()
        })
        .unwrap();
    let mut polls = 0;
    let mut got = Vec::new();
    while l.watches_pending() && polls < 100 {
        polls += 1;
        for (b, events) in poll(&mut l) {
            assert_eq!(b.id, id);
            got.push(
                events
                    .iter()
                    .map(|e| e.entry.as_ref().unwrap().value.to_vec())
                    .collect::<Vec<_>>(),
            );
        }
    }
    assert!(polls > 2, "{polls} polls");
    assert_eq!(got, [vec![b"first".to_vec(), b"second".to_vec()]]);
    // A write meanwhile: the next batch, on its own.
    l.put(T0, b"z", b"third", PutOptions::default()).unwrap();
    assert_eq!(poll(&mut l).len(), 1);
}

// Every change a watcher is owed survives compactions between polls: one
// the host asks for at the start of a batch still being found (the search
// starts again, and the watcher gets what a watch from there sees, as on
// etcd), and the automatic ones, which stop one revision short of what a
// watcher still needs (a deletion at its next revision is not dropped).
#[test]
fn compactions_between_polls_never_lose_or_change_what_a_watcher_is_given() {
    use edge_lease_core::{DeleteRequest, Op, PutRequest, TxnRequest};
    // (revision, value or None for a deletion, previous value)
    type Seen = (i64, Option<Vec<u8>>, Option<Vec<u8>>);
    let describe = |events: &[Event]| -> Vec<Seen> {
        events
            .iter()
            .map(|e| {
                (
                    e.revision,
                    e.entry.as_ref().map(|x| x.value.to_vec()),
                    e.prev.as_ref().map(|x| x.value.to_vec()),
                )
            })
            .collect()
    };
    let drain = |l: &mut Lessor| {
        let mut got = Vec::new();
        for _ in 0..1000 {
            if !l.watches_pending() {
                break;
            }
            for (b, events) in poll(l) {
                assert_eq!(b.compact_revision, 0, "cancelled");
                got.extend(events);
            }
        }
        got
    };
    // z is put and deleted again in one revision x (a put, then a from-key
    // delete), then 6000 other changes in 300 revisions: a watch of z from
    // x is found over several polls.
    let setup = |history| {
        let mut l = Lessor::new(Config {
            history,
            ..Default::default()
        })
        .unwrap();
        l.put(T0, b"z", b"old", PutOptions::default()).unwrap();
        let put = Op::Put(PutRequest {
            key: b"z".to_vec(),
            value: b"new".to_vec(),
            options: PutOptions::default(),
        });
        let delete = Op::Delete(DeleteRequest {
            key: b"y".to_vec(),
            range_end: vec![0],
            prev_kv: false,
        });
        let txn = TxnRequest {
            success: vec![put, delete],
            ..Default::default()
        };
        let x = l.txn(T0, &txn).unwrap().revision;
        for r in 0..300u32 {
            let puts = (0..20u32).map(|i| {
                Op::Put(PutRequest {
                    key: format!("b/{i}").into_bytes(),
                    value: r.to_le_bytes().to_vec(),
                    options: PutOptions::default(),
                })
            });
            let txn = TxnRequest {
                success: puts.collect(),
                ..Default::default()
            };
            l.txn(T0, &txn).unwrap();
        }
        let z = WatchRequest {
            key: b"z".to_vec(),
            start_revision: x,
            prev_kv: true,
            ..Default::default()
        };
        (l, x, z)
    };
    let (mut l, x, z) = setup(i64::MAX);
    l.watch(&z).unwrap();
    let whole = describe(&drain(&mut l));
    let old = Some(b"old".to_vec());
    assert_eq!(
        whole,
        [(x, Some(b"new".to_vec()), old.clone()), (x, None, old)]
    );
    // Compacted at x first: what a watch from x sees then.
    let (mut l, x, z) = setup(i64::MAX);
    l.compact(x).unwrap();
    while l.compact_step(usize::MAX).unwrap() > 0 {}
    l.watch(&z).unwrap();
    let from_point = describe(&drain(&mut l));
    // The same when the compaction comes while the batch is being found.
    let (mut l, x, z) = setup(i64::MAX);
    l.watch(&z).unwrap();
    assert!(poll(&mut l).is_empty() && l.watches_pending());
    l.compact(x).unwrap();
    while l.compact_step(usize::MAX).unwrap() > 0 {}
    assert_eq!(describe(&drain(&mut l)), from_point);

    // Automatic compaction (history 1000) while the watcher is behind: it
    // stops short of the revision the watcher needs next.
    let (mut l, x, z) = setup(1000);
    l.watch(&z).unwrap();
    assert!(poll(&mut l).is_empty());
    for i in 0..1000u32 {
        l.put(T0, b"c", &i.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    assert_eq!(l.compacted(), x - 1);
    assert_eq!(describe(&drain(&mut l)), whole);

    // A deletion at the revision a full batch ends before.
    let mut l = Lessor::new(Config::default()).unwrap();
    let k = WatchRequest {
        key: b"k".to_vec(),
        start_revision: 2,
        ..Default::default()
    };
    l.watch(&k).unwrap();
    for i in 0..1000u32 {
        l.put(T0, b"k", &i.to_le_bytes(), PutOptions::default())
            .unwrap();
        l.put(T0, b"o", &i.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    let deleted = l.delete(T0, b"k", false).unwrap().revision;
    l.put(T0, b"k", b"again", PutOptions::default()).unwrap();
    let first: usize = poll(&mut l).iter().map(|(_, e)| e.len()).sum();
    assert_eq!(first, 1000);
    for i in 0..2500u32 {
        l.put(T0, b"o", &i.to_le_bytes(), PutOptions::default())
            .unwrap();
    }
    let rest = describe(&drain(&mut l));
    assert_eq!(
        rest[..2],
        [
            (deleted, None, None),
            (deleted + 1, Some(b"again".to_vec()), None)
        ]
    );
}

// The key bucket read in pieces while the lessor goes on: records are read
// as their versions are (a later put or delete of the key changes nothing
// read), and a compaction that drops a version not yet read fails the read
// rather than leave a record out.
#[cfg(feature = "etcd")]
#[test]
fn the_key_bucket_read_in_pieces_while_writes_go_on() {
    let mut l = Lessor::new(Config::default()).unwrap();
    for k in [b"a", b"b", b"c"] {
        l.put(T0, k, b"1", PutOptions::default()).unwrap();
    }
    let whole = l.etcd_key_bucket();
    let mut cursor = l.etcd_key_bucket_cursor();
    let first = l.etcd_key_bucket_next(&mut cursor, 1).unwrap();
    assert_eq!(records(&first).len(), 1);
    // The versions not yet read are superseded and deleted meanwhile.
    l.put(T0, b"b", b"2", PutOptions::default()).unwrap();
    l.delete_range(
        T0,
        &edge_lease_core::DeleteRequest {
            key: b"c".to_vec(),
            ..Default::default()
        },
    )
    .unwrap();
    let rest = l.etcd_key_bucket_next(&mut cursor, usize::MAX).unwrap();
    assert_eq!([first, rest].concat(), whole);
    assert!(l
        .etcd_key_bucket_next(&mut cursor, usize::MAX)
        .unwrap()
        .is_empty());
    // A compaction past the versions a cursor has yet to read.
    let mut cursor = l.etcd_key_bucket_cursor();
    l.etcd_key_bucket_next(&mut cursor, 1).unwrap();
    l.compact(l.revision()).unwrap();
    swept(&mut l);
    assert_eq!(
        l.etcd_key_bucket_next(&mut cursor, usize::MAX),
        Err(Error::Compacted(6))
    );
}

// A key changed many times, compacted at several points: what a read at or
// after each point needs stays (etcd's keyIndex.compact: the state at the
// point, and every version after it), the rest goes with its bytes, and a
// key written as many times since reads the same.
#[test]
fn compacting_a_key_changed_many_times_keeps_exactly_what_reads_after_the_point_need() {
    let config = Config {
        history: i64::MAX,
        ..Config::default()
    };
    let mut l = Lessor::new(config.clone()).unwrap();
    for v in 0..3000u32 {
        l.put(T0, b"hot", &v.to_be_bytes(), PutOptions::default())
            .unwrap();
        if v % 7 == 0 {
            l.put(T0, b"cold", &v.to_be_bytes(), PutOptions::default())
                .unwrap();
        }
    }
    let get = |l: &mut Lessor, key: &[u8], rev: i64| {
        let req = RangeRequest {
            key: key.to_vec(),
            revision: rev,
            ..Default::default()
        };
        l.range_kv(T0, &req)
            .map(|r| r.kvs.first().map(|(_, e)| e.value.to_vec()))
    };
    let end = l.revision();
    let want: Vec<_> = (2..=end)
        .map(|rev| (get(&mut l, b"hot", rev), get(&mut l, b"cold", rev)))
        .collect();
    for point in [100, 101, 1700, end - 1] {
        l.compact(point).unwrap();
        // Reads are the same before the sweep and after it.
        for swept_now in [false, true] {
            if swept_now {
                swept(&mut l);
            }
            for rev in [point, point + 1, end] {
                let at = (rev - 2) as usize;
                assert_eq!(
                    (get(&mut l, b"hot", rev), get(&mut l, b"cold", rev)),
                    want[at],
                    "at {rev} after compacting at {point} (swept: {swept_now})"
                );
            }
        }
        for rev in point..=end {
            let at = (rev - 2) as usize;
            assert_eq!(
                (get(&mut l, b"hot", rev), get(&mut l, b"cold", rev)),
                want[at],
                "at {rev} after compacting at {point}"
            );
        }
        assert_eq!(get(&mut l, b"hot", point - 1), Err(Error::Compacted(point)));
    }
    // Compacted at the last revision, only the live entries are left: as
    // much as a lessor that wrote them alone.
    l.compact(end).unwrap();
    swept(&mut l);
    let mut fresh = Lessor::new(config).unwrap();
    fresh
        .put(T0, b"hot", &2999u32.to_be_bytes(), PutOptions::default())
        .unwrap();
    fresh
        .put(T0, b"cold", &2996u32.to_be_bytes(), PutOptions::default())
        .unwrap();
    assert_eq!(l.versions(end).len(), 2);
    assert_eq!(l.size_bytes(), fresh.size_bytes());
}
