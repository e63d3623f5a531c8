//! Durable state (issue 4): what the lessor writes, and what a restart gets
//! back. The store is an in-memory map that applies each batch whole; a
//! restart is `Lessor::restore` from that map. Time is always injected.

#![cfg(not(target_arch = "wasm32"))] // proptest is a native-only dev-dependency

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use edge_lease_core::storage::REVISION_KEY;
use edge_lease_core::{
    Batch, Config, DeleteRequest, Error, Lessor, Op as TxnOp, PutOptions, PutRequest, Storage,
    TxnRequest,
};
use proptest::prelude::*;

const T0: i64 = 1_700_000_000_000;

#[derive(Default)]
struct Inner {
    map: BTreeMap<String, Vec<u8>>,
    /// Batches applied.
    writes: usize,
    /// Write attempts, failed ones included.
    attempts: usize,
    /// Fail the write attempt with this index (counted from `attempts`).
    fail_at: Option<usize>,
}

/// The host's store: applies a batch all-or-nothing, or refuses it.
#[derive(Clone, Default)]
struct MemStore(Rc<RefCell<Inner>>);

impl Storage for MemStore {
    fn write(&mut self, batch: &Batch) -> Result<(), String> {
        let mut s = self.0.borrow_mut();
        let attempt = s.attempts;
        s.attempts += 1;
        if s.fail_at == Some(attempt) {
            return Err("injected failure".into());
        }
        for k in batch.deletes() {
            s.map.remove(k);
        }
        for (k, v) in batch.puts() {
            s.map.insert(k.to_string(), v.to_vec());
        }
        s.writes += 1;
        Ok(())
    }
}

impl MemStore {
    fn entries(&self) -> Vec<(String, Vec<u8>)> {
        self.0
            .borrow()
            .map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn writes(&self) -> usize {
        self.0.borrow().writes
    }

    fn attempts(&self) -> usize {
        self.0.borrow().attempts
    }

    /// Fails the `n`-th write attempt from now on (0: the next one).
    fn fail_in(&self, n: Option<usize>) {
        let mut s = self.0.borrow_mut();
        s.fail_at = n.map(|n| s.attempts + n);
    }

    /// Opens a lessor on this store, as a host does after a restart.
    fn open(&self, now: i64) -> Lessor {
        Lessor::restore(
            Config::default(),
            self.entries(),
            now,
            Some(Box::new(self.clone())),
        )
        .unwrap()
    }
}

fn slack(ttl: i64) -> i64 {
    ttl * 500
}

fn text(lease: i64) -> PutOptions {
    PutOptions {
        lease,
        text: true,
        ..Default::default()
    }
}

/// Deadline of a live lease, read back through `time_to_live`.
fn deadline(l: &mut Lessor, now: i64, id: i64) -> Option<i64> {
    l.time_to_live(now, id, false).ok().map(|t| now + t.ttl_ms)
}

// ---- rule 1: never early --------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// A lease renewed before a crash lives, after recovery, at least until
    /// its last renew + TTL, and at most half a TTL longer.
    #[test]
    fn renewed_lease_is_never_early_after_restart(
        ttl in 1i64..120,
        gaps in prop::collection::vec(0.0f64..1.0, 0..20),
        crash in 0.0f64..1.0,
        restarts_between in prop::collection::vec(any::<bool>(), 20),
    ) {
        let ttl_ms = ttl * 1000;
        let store = MemStore::default();
        let mut l = store.open(T0);
        let id = l.grant(T0, ttl, 7).unwrap().id;
        let mut now = T0;
        for (i, g) in gaps.iter().enumerate() {
            // Any gap short of the deadline keeps the lease alive.
            now += (g * (ttl_ms - 1) as f64) as i64;
            if restarts_between[i] {
                l = store.open(now);
            }
            prop_assert_eq!(l.renew(now, id), Ok(ttl));
        }
        let last_renew = now;
        let crash_at = now + (crash * (ttl_ms - 1) as f64) as i64;
        let mut r = store.open(crash_at);
        let d = deadline(&mut r, crash_at, id).expect("alive after restart");
        prop_assert!(d >= last_renew + ttl_ms, "early: {} < {}", d, last_renew + ttl_ms);
        prop_assert!(d <= last_renew + ttl_ms + slack(ttl), "late beyond the bound");
    }
}

// ---- rule 2: bounded ------------------------------------------------------

/// Restarts every 50 ms, each ticking like a host's alarm would and
/// checkpointing the lease, and an unrelated lease kept alive meanwhile (so
/// the store keeps being written):
/// the abandoned lease and its key are gone by last renew + TTL + TTL/2.
#[test]
fn frequent_restarts_cannot_keep_an_abandoned_lease_alive() {
    for compact in [false, true] {
        let ttl = 10;
        let store = MemStore::default();
        let mut l = store.open(T0);
        l.grant(T0, ttl, 1).unwrap();
        l.grant(T0, ttl, 2).unwrap();
        l.put(T0, b"svc/a", b"up", text(1)).unwrap();
        // Renewed at irregular times, then abandoned at last_renew.
        for t in [3_000, 7_100, 11_900, 12_000] {
            l.renew(T0 + t, 1).unwrap();
            // Lease 2 stays live for real (a snapshot leaves out a lease
            // past its deadline, which only the restore slack would revive).
            l.renew(T0 + t, 2).unwrap();
        }
        let last_renew = T0 + 12_000;
        let bound = last_renew + ttl * 1000 + slack(ttl);
        let mut gone_at = None;
        let mut now = last_renew;
        while now < bound + 10_000 {
            now += 50;
            l = if compact {
                // A host that compacts its store from the lessor each time:
                // the snapshot must not drift either.
                let snap = l.snapshot(T0);
                let fresh = MemStore::default();
                fresh.0.borrow_mut().map = snap.into_iter().collect();
                *store.0.borrow_mut() = std::mem::take(&mut *fresh.0.borrow_mut());
                store.open(now)
            } else {
                store.open(now)
            };
            l.tick(now);
            l.renew(now, 2).unwrap();
            // A checkpoint writes the lease record: it must not carry the
            // restored (slack-extended) deadline forward.
            let _ = l.checkpoint(now, 1, 1_000);
            let alive = l.time_to_live(now, 1, false).is_ok();
            if now < last_renew + ttl * 1000 {
                assert!(alive, "rule 1 broken at +{} ms", now - last_renew);
            }
            if !alive && gone_at.is_none() {
                gone_at = Some(now);
            }
            if now >= bound {
                assert!(!alive, "still alive at +{} ms", now - last_renew);
                assert!(l.get(now, b"svc/a").is_none());
                assert!(
                    !store.0.borrow().map.contains_key("v1/key/svc/a"),
                    "tick deleted the key from the store"
                );
            }
        }
        let gone_at = gone_at.unwrap();
        assert!(gone_at <= bound, "compact={compact}");
    }
}

// ---- rule 3: cheap --------------------------------------------------------

/// Keepalive every TTL/3 for 100 TTLs: counts the store writes per TTL.
fn writes_per_ttl(ttl: i64) -> f64 {
    let store = MemStore::default();
    let mut l = store.open(T0);
    l.grant(T0, ttl, 1).unwrap();
    let start = store.writes();
    let every = ttl * 1000 / 3;
    let mut now = T0;
    while now + every <= T0 + 100 * ttl * 1000 {
        now += every;
        l.renew(now, 1).unwrap();
    }
    (store.writes() - start) as f64 / 100.0
}

#[test]
fn keepalive_every_third_of_a_ttl_writes_one_and_a_half_times_per_ttl() {
    for ttl in [1, 5, 30, 3600] {
        let rate = writes_per_ttl(ttl);
        println!("ttl {ttl}s, renew every ttl/3: {rate} writes per ttl");
        assert!(rate <= 1.5 + 0.02, "ttl {ttl}: {rate} writes per ttl");
        // And coalescing does not starve persistence entirely.
        assert!(rate >= 1.0, "ttl {ttl}: {rate}");
    }
}

#[test]
fn renew_within_half_a_ttl_writes_nothing() {
    let store = MemStore::default();
    let mut l = store.open(T0);
    l.grant(T0, 10, 1).unwrap();
    let w = store.writes();
    for t in (100..=5_000).step_by(100) {
        l.renew(T0 + t, 1).unwrap();
    }
    assert_eq!(store.writes(), w);
    l.renew(T0 + 5_001, 1).unwrap();
    assert_eq!(store.writes(), w + 1);
}

// ---- identical restore ------------------------------------------------------

/// Everything observable about a lessor at `now`, with each lease's
/// remaining time as given (so callers can compare it within the slack).
#[derive(Debug, PartialEq)]
struct View {
    revision: i64,
    /// id -> (granted ttl, keys)
    leases: BTreeMap<i64, (i64, Vec<Vec<u8>>)>,
    ttl_ms: BTreeMap<i64, i64>,
    keys: Vec<(Vec<u8>, edge_lease_core::Entry)>,
}

fn view(l: &mut Lessor, now: i64) -> View {
    let mut leases = BTreeMap::new();
    let mut ttl_ms = BTreeMap::new();
    for id in l.leases(now) {
        let t = l.time_to_live(now, id, true).unwrap();
        leases.insert(
            id,
            (t.granted_ttl, t.keys.iter().map(|k| k.to_vec()).collect()),
        );
        ttl_ms.insert(id, t.ttl_ms);
    }
    let keys = l
        .range(now, b"")
        .into_iter()
        .map(|(k, e)| (k.to_vec(), e.clone()))
        .collect();
    View {
        revision: l.revision(),
        leases,
        ttl_ms,
        keys,
    }
}

#[test]
fn restore_gives_back_identical_state_with_extreme_ids() {
    let store = MemStore::default();
    let mut l = store.open(T0);
    let ids = [-1, i64::MIN, i64::MAX, 1, 0x7fff_ffff_ffff_fffe, -2];
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(l.grant(T0, 5 + i as i64, id).unwrap().id, id);
    }
    let random = l.grant(T0, 9_000_000_000, 0).unwrap().id;
    let bytes = PutOptions {
        lease: i64::MIN,
        ..Default::default()
    };
    l.put(T0, b"text", "h\u{e9}llo\nworld".as_bytes(), text(-1))
        .unwrap();
    l.put(T0, b"bytes\x00\xff %/", b"\x00\n\xff\xfe", bytes)
        .unwrap();
    l.put(T0, b"empty", b"", text(i64::MAX)).unwrap();
    l.put(T0, "\u{1F512}/lock".as_bytes(), b"1", text(random))
        .unwrap();
    l.put(T0, b"plain", b"v1", PutOptions::default()).unwrap();
    l.put(T0, b"plain", b"v2", PutOptions::default()).unwrap();
    l.put(T0, b"plain", b"v3", text(1)).unwrap(); // version 3, moved to lease 1
    l.put(T0, b"gone", b"x", PutOptions::default()).unwrap();
    l.delete(T0, b"gone", false).unwrap();
    l.put(T0, b"switch", b"a", text(-2)).unwrap();
    l.put(T0, b"switch", b"b", text(-1)).unwrap();
    l.revoke(T0, -2).unwrap();

    let now = T0 + 1_000;
    let before = view(&mut l, now);
    let mut r = store.open(now);
    let after = view(&mut r, now);
    assert_eq!(after.revision, before.revision);
    assert_eq!(after.leases, before.leases);
    assert_eq!(after.keys, before.keys);
    for (id, ms) in &before.ttl_ms {
        let ttl = before.leases[id].0;
        let got = after.ttl_ms[id];
        assert!(
            *ms <= got && got <= ms + slack(ttl),
            "lease {id}: {ms} vs {got}"
        );
    }
    // The text/bytes distinction survives.
    assert!(r.get(now, b"text").unwrap().text);
    assert!(!r.get(now, b"bytes\x00\xff %/").unwrap().text);
    assert_eq!(
        r.leases(now).into_iter().collect::<BTreeSet<_>>(),
        ids.iter()
            .copied()
            .filter(|&i| i != -2)
            .chain([random])
            .collect::<BTreeSet<_>>()
    );
    // Restore writes nothing, and what it holds is exactly what is stored.
    assert_eq!(sorted(r.snapshot(T0)), store.entries());
    let snap: BTreeMap<_, _> = r.snapshot(T0).into_iter().collect();
    assert_eq!(snap, store.0.borrow().map);
    println!(
        "restore: {} entries, {} bytes",
        snap.len(),
        snap.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
    );
}

fn sorted(mut v: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    v.sort();
    v
}

/// Fencing tokens (create revisions) keep growing across restarts, including
/// after a revoke, an expiry and a delete were the last changes before one.
#[test]
fn revision_never_goes_back_across_restarts() {
    let store = MemStore::default();
    let mut now = T0;
    let mut last_token = 0;
    let mut last_revision = 1;
    for round in 0..50i64 {
        let mut l = store.open(now);
        assert!(l.revision() >= last_revision, "round {round}");
        let id = l.grant(now, 2, 0).unwrap().id;
        let put = l
            .put(
                now,
                b"/locks/job",
                b"me",
                PutOptions {
                    lease: id,
                    if_absent: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(put.created, "round {round}: the previous holder is gone");
        let token = l.get(now, b"/locks/job").unwrap().create_revision;
        assert!(token > last_token, "round {round}: {token} <= {last_token}");
        last_token = token;
        // End the holder three ways, crashing right after each.
        match round % 3 {
            0 => last_revision = l.revoke(now, id).unwrap().revision,
            1 => last_revision = l.delete(now, b"/locks/job", false).unwrap().revision,
            _ => {
                now += 3_000 + slack(2);
                // Also expires the lease of round 1 (its key was deleted).
                let t = l.tick(now);
                let r = t.expired.iter().find(|r| r.id == id).unwrap();
                last_revision = r.revision;
            }
        }
        now += 1;
    }
}

// ---- corrupt entries: the decoder fuzz -------------------------------------

/// A store with every kind of entry, built through the lessor.
fn valid_store() -> Vec<(String, Vec<u8>)> {
    let store = MemStore::default();
    let mut l = store.open(T0);
    l.grant(T0, 10, -1).unwrap();
    l.grant(T0, 3, i64::MIN).unwrap();
    l.put(T0, b"a b", "t\u{e9}xt".as_bytes(), text(-1)).unwrap();
    let bytes = PutOptions {
        lease: i64::MIN,
        ..Default::default()
    };
    l.put(T0, b"\x00bin", b"\xff\n\x01", bytes).unwrap();
    l.put(T0, b"free", b"v", PutOptions::default()).unwrap();
    l.put(T0, b"free", b"w", PutOptions::default()).unwrap();
    l.put(T0, b"gone", b"x", PutOptions::default()).unwrap();
    l.delete(T0, b"gone", false).unwrap();
    // A txn that deletes from "free" on and puts it again: "free" changes
    // twice in one revision (a version stored at sub-revision 1).
    let txn = TxnRequest {
        compare: vec![],
        success: vec![
            TxnOp::Delete(DeleteRequest {
                key: b"free".to_vec(),
                range_end: vec![0],
                prev_kv: false,
            }),
            TxnOp::Put(PutRequest {
                key: b"free".to_vec(),
                value: b"again".to_vec(),
                options: PutOptions::default(),
            }),
        ],
        failure: vec![],
    };
    l.txn(T0, &txn).unwrap();
    l.put(T0, b"free", b"z", PutOptions::default()).unwrap();
    l.checkpoint(T0, i64::MIN, 1_500).unwrap();
    l.set_host_entry("alarms", Some(b"[]\n\xff")).unwrap();
    let entries = store.entries();
    assert!(
        entries.iter().any(|(k, _)| k.contains('.')),
        "a sub-revision version"
    );
    entries
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate { entry: usize, at: usize },
    FlipValue { entry: usize, bit: usize },
    FlipKey { entry: usize, bit: usize },
    Drop { entry: usize },
    Duplicate { entry: usize },
    ReplaceValue { entry: usize, bytes: Vec<u8> },
    Add { key: String, bytes: Vec<u8> },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let key = prop_oneof![
        "v1/(lease|key)/[ -~]{0,20}",
        "v1/revision",
        "[ -~]{0,12}",
        "v1/lease/[0-9a-fA-F+-]{14,17}",
    ];
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(entry, at)| Mutation::Truncate { entry, at }),
        (any::<usize>(), any::<usize>()).prop_map(|(entry, bit)| Mutation::FlipValue { entry, bit }),
        (any::<usize>(), any::<usize>()).prop_map(|(entry, bit)| Mutation::FlipKey { entry, bit }),
        any::<usize>().prop_map(|entry| Mutation::Drop { entry }),
        any::<usize>().prop_map(|entry| Mutation::Duplicate { entry }),
        (
            any::<usize>(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..40),
                "(ttl|create)=[0-9-]{0,20} (deadline|mod)=[0-9a-z-]{0,20} (remaining|version)=[0-9-]{0,20}( lease=[0-9a-f]{16} text=[0-2])?\n?"
                    .prop_map(String::into_bytes),
                // The binary layout's records: its first byte, then anything.
                prop::collection::vec(any::<u8>(), 0..24).prop_map(|mut v| {
                    v.insert(0, 0x01);
                    v
                }),
            ]
        )
            .prop_map(|(entry, bytes)| Mutation::ReplaceValue { entry, bytes }),
        (key, prop::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(key, bytes)| Mutation::Add { key, bytes }),
    ]
}

fn apply(entries: &mut Vec<(String, Vec<u8>)>, m: &Mutation) {
    let n = entries.len();
    match m {
        Mutation::Truncate { entry, at } => {
            let v = &mut entries[entry % n].1;
            v.truncate(at % (v.len() + 1));
        }
        Mutation::FlipValue { entry, bit } => {
            let v = &mut entries[entry % n].1;
            if !v.is_empty() {
                let bit = bit % (v.len() * 8);
                v[bit / 8] ^= 1 << (bit % 8);
            }
        }
        Mutation::FlipKey { entry, bit } => {
            let mut k = entries[entry % n].0.clone().into_bytes();
            if k.is_empty() {
                return;
            }
            let bit = bit % (k.len() * 8);
            k[bit / 8] ^= 1 << (bit % 8);
            entries[entry % n].0 = String::from_utf8_lossy(&k).into_owned();
        }
        Mutation::Drop { entry } => {
            entries.remove(entry % n);
        }
        Mutation::Duplicate { entry } => {
            let e = entries[entry % n].clone();
            entries.push(e);
        }
        Mutation::ReplaceValue { entry, bytes } => entries[entry % n].1 = bytes.clone(),
        Mutation::Add { key, bytes } => entries.push((key.clone(), bytes.clone())),
    }
}

/// Restore's contract on any input: Ok, or CorruptEntry naming one of the
/// entries it was given (or the revision entry it needed and did not get).
/// A lessor it returns must then work: expire, snapshot and restore again.
fn check_restore(entries: &[(String, Vec<u8>)]) -> Result<(), TestCaseError> {
    match Lessor::restore(Config::default(), entries.to_vec(), T0, None) {
        Ok(mut l) => {
            let _ = view(&mut l, T0);
            let snap = l.snapshot(T0);
            let far = T0 + 20_000_000_000_000;
            l.tick(far);
            let _ = l.next_deadline();
            let mut again = Lessor::restore(Config::default(), snap.clone(), T0, None)
                .map_err(|e| TestCaseError::fail(format!("snapshot does not restore: {e}")))?;
            prop_assert_eq!(sorted(again.snapshot(T0)), sorted(snap));
            prop_assert_eq!(
                view(&mut again, T0),
                view(
                    &mut Lessor::restore(Config::default(), entries.to_vec(), T0, None).unwrap(),
                    T0
                )
            );
        }
        Err(Error::CorruptEntry { key, reason }) => {
            prop_assert!(
                key == REVISION_KEY || entries.iter().any(|(k, _)| *k == key),
                "error names {:?}, not an input entry ({})",
                key,
                reason
            );
        }
        Err(e) => return Err(TestCaseError::fail(format!("not CorruptEntry: {e:?}"))),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn restore_of_mutated_store_is_ok_or_corrupt_entry(
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut entries = valid_store();
        for m in &ms {
            if entries.is_empty() {
                break;
            }
            apply(&mut entries, m);
        }
        check_restore(&entries)?;
    }

    #[test]
    fn restore_of_random_entries_is_ok_or_corrupt_entry(
        entries in prop::collection::vec(
            (
                prop_oneof![
                    "v1/(lease|key)/[ -~]{0,20}",
                    "v1/old/[0-9a-f]{16}/[a-z%0-9]{1,8}",
                    "v1/old/[0-9a-f]{16}\\.[0-9]{0,3}/[a-z%0-9]{1,8}",
                    "v1/old/[ -~]{0,24}",
                    Just("v1/revision".to_string()),
                    Just("v1/compacted".to_string()),
                    "v1/lease/[0-9a-f]{16}",
                    "v1/key/[a-z%0-9]{1,8}",
                    "v1/host/[ -~]{0,8}",
                    "\\PC{0,10}",
                ],
                prop::collection::vec(any::<u8>(), 0..60),
            ),
            0..6,
        ),
    ) {
        check_restore(&entries)?;
    }
}

#[test]
fn a_sub_revision_is_plain_decimal_above_zero() {
    let base = valid_store();
    let (name, value) = base.iter().find(|(k, _)| k.contains('.')).cloned().unwrap();
    for bad in [".0/", ".01/", ".x/", "./", ".1.1/", ".4294967296/"] {
        let renamed = name.replacen(".1/", bad, 1);
        let entries: Vec<_> = base
            .iter()
            .map(|(k, v)| {
                if *k == name {
                    (renamed.clone(), value.clone())
                } else {
                    (k.clone(), v.clone())
                }
            })
            .collect();
        match Lessor::restore(Config::default(), entries, T0, None) {
            Err(Error::CorruptEntry { key, .. }) => assert_eq!(key, renamed),
            other => panic!("{renamed}: {:?}", other.err()),
        }
    }
}

#[test]
fn host_entries_are_stored_restored_and_snapshotted() {
    let store = MemStore::default();
    let mut l = store.open(T0);
    assert_eq!(l.host_entry("alarms"), None);
    l.set_host_entry("alarms", Some(b"one")).unwrap();
    l.set_host_entry("other.v2", Some(b"")).unwrap();
    let writes = store.writes();
    // Setting what is there already writes nothing.
    l.set_host_entry("alarms", Some(b"one")).unwrap();
    assert_eq!(store.writes(), writes);
    assert_eq!(l.host_entry("alarms"), Some(&b"one"[..]));
    // The revision is the keyspace's: host entries do not move it.
    assert_eq!(l.revision(), 1);

    let mut again = store.open(T0 + 1);
    assert_eq!(again.host_entry("alarms"), Some(&b"one"[..]));
    assert_eq!(again.host_entry("other.v2"), Some(&b""[..]));
    let snap = again.snapshot(T0);
    assert!(snap.contains(&("v1/host/alarms".to_string(), b"one".to_vec())));
    let from_snap = Lessor::restore(Config::default(), snap, T0 + 2, None).unwrap();
    assert_eq!(from_snap.host_entry("other.v2"), Some(&b""[..]));

    again.set_host_entry("alarms", None).unwrap();
    assert_eq!(store.open(T0 + 3).host_entry("alarms"), None);

    // A refused write changes nothing.
    store.fail_in(Some(0));
    let err = again.set_host_entry("other.v2", Some(b"new")).unwrap_err();
    assert_eq!(err.code(), "StorageFailed");
    assert_eq!(again.host_entry("other.v2"), Some(&b""[..]));
    assert_eq!(store.open(T0 + 4).host_entry("other.v2"), Some(&b""[..]));

    for bad in ["", "a/b", "a b", "caf\u{e9}", &"x".repeat(65)] {
        let err = again.set_host_entry(bad, Some(b"v")).unwrap_err();
        assert_eq!(err.code(), "InvalidArgument", "{bad:?}");
    }
    let big = vec![0u8; (1 << 20) + 1];
    assert_eq!(
        again.set_host_entry("big", Some(&big)).unwrap_err().code(),
        "InvalidArgument"
    );
    again.set_host_entry("big", Some(&big[1..])).unwrap();
    // At most 64 entries ("alarms" went; "other.v2" and "big" are there).
    for i in 0..62 {
        again.set_host_entry(&format!("n{i}"), Some(b"")).unwrap();
    }
    assert_eq!(
        again
            .set_host_entry("one-more", Some(b""))
            .unwrap_err()
            .code(),
        "InvalidArgument"
    );
    again.set_host_entry("n0", Some(b"changed")).unwrap();
    assert_eq!(store.open(T0 + 5).host_entry("n0"), Some(&b"changed"[..]));
    let mut many = store.entries();
    many.push(("v1/host/one-more".into(), vec![]));
    match Lessor::restore(Config::default(), many, T0, None) {
        Err(Error::CorruptEntry { key, .. }) => assert!(key.starts_with("v1/host/")),
        other => panic!("65 host entries: {:?}", other.err()),
    }
    for bad in ["v1/host/", "v1/host/a b", "v1/host/a/b"] {
        match Lessor::restore(Config::default(), vec![(bad, b"v".to_vec())], T0, None) {
            Err(Error::CorruptEntry { key, .. }) => assert_eq!(key, bad),
            other => panic!("{bad}: {:?}", other.err()),
        }
    }
}

#[test]
fn duplicate_entries_are_corrupt() {
    let entries = valid_store();
    for (i, e) in entries.iter().enumerate() {
        let mut dup = entries.clone();
        dup.insert(i, e.clone());
        match Lessor::restore(Config::default(), dup, T0, None) {
            Err(Error::CorruptEntry { key, reason }) => {
                assert_eq!(key, e.0);
                assert!(reason.contains("duplicate"), "{reason}");
            }
            other => panic!("{}: {:?}", e.0, other.err()),
        }
    }
}

/// The lease of a key record as this build writes it (codec.rs: 0x01, a
/// flags byte, then varints: create, mod, version, lease).
fn stored_lease(record: &[u8]) -> i64 {
    assert_eq!(record[0], 0x01, "a binary record");
    let mut at = 2;
    let mut varint = || {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = record[at];
            at += 1;
            v |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return v as i64;
            }
        }
    };
    for _ in 0..3 {
        varint();
    }
    varint()
}

#[test]
fn a_key_whose_lease_is_not_stored_is_corrupt() {
    let entries = valid_store();
    let leases: Vec<&(String, Vec<u8>)> = entries
        .iter()
        .filter(|(k, _)| k.starts_with("v1/lease/"))
        .collect();
    assert!(!leases.is_empty());
    let mut refused = 0;
    for (name, _) in leases {
        let id = &name["v1/lease/".len()..];
        let without: Vec<_> = entries.iter().filter(|(k, _)| k != name).cloned().collect();
        // The keys that named this lease: restore must refuse one of them.
        let named: Vec<&String> = entries
            .iter()
            .filter(|(k, v)| {
                k.starts_with("v1/key/") && format!("{:016x}", stored_lease(v) as u64) == id
            })
            .map(|(k, _)| k)
            .collect();
        match Lessor::restore(Config::default(), without, T0, None) {
            Err(Error::CorruptEntry { key, reason }) => {
                assert!(named.contains(&&key), "{key} is not one of {named:?}");
                assert!(
                    reason.contains(&format!("lease {id} is not stored")),
                    "{reason}"
                );
                refused += 1;
            }
            Ok(_) => assert!(
                named.is_empty(),
                "{name}: keys {named:?} restored without their lease"
            ),
            Err(e) => panic!("{name}: {e:?}"),
        }
    }
    assert!(refused > 0, "no stored lease had keys");
}

// ---- storage faults ---------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Grant {
        ttl: i64,
        id: usize,
    },
    Renew {
        id: usize,
    },
    Revoke {
        id: usize,
    },
    Put {
        key: usize,
        lease: Option<usize>,
        text: bool,
        if_absent: bool,
    },
    Delete {
        key: usize,
    },
    Checkpoint {
        id: usize,
        remaining: i64,
    },
    Tick,
    Advance {
        ms: i64,
    },
    Restart,
}

const IDS: [i64; 6] = [1, 2, 3, -1, i64::MIN, i64::MAX];
const KEYS: [&[u8]; 5] = [b"a", b"b", b"c/d", b"e f", b"\xff"];

fn op() -> impl Strategy<Value = Op> {
    let id = 0..IDS.len();
    prop_oneof![
        3 => (1i64..8, id.clone()).prop_map(|(ttl, id)| Op::Grant { ttl, id }),
        4 => id.clone().prop_map(|id| Op::Renew { id }),
        1 => id.clone().prop_map(|id| Op::Revoke { id }),
        4 => (0..KEYS.len(), prop::option::weighted(0.7, id.clone()), any::<bool>(), any::<bool>())
            .prop_map(|(key, lease, text, if_absent)| Op::Put { key, lease, text, if_absent }),
        1 => (0..KEYS.len()).prop_map(|key| Op::Delete { key }),
        1 => (id, 0i64..10_000).prop_map(|(id, remaining)| Op::Checkpoint { id, remaining }),
        2 => Just(Op::Tick),
        3 => (0i64..6_000).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Restart),
    ]
}

/// The stored map equals what the lessor would write as a fresh snapshot
/// (the revision entry only appears with the first key change), but for the
/// leases past their deadline that no tick has removed yet, and their keys:
/// the store still holds them, a snapshot leaves them out.
fn assert_matches_store(l: &mut Lessor, store: &MemStore, now: i64) -> Result<(), TestCaseError> {
    let gone: Vec<i64> = IDS
        .iter()
        .copied()
        .filter(|&id| l.time_to_live(now, id, false).is_err())
        .collect();
    let mut live: BTreeMap<String, Vec<u8>> = l.snapshot(T0).into_iter().collect();
    let mut stored = store.0.borrow().map.clone();
    stored.retain(|k, v| {
        let dead_lease = gone
            .iter()
            .any(|&id| *k == format!("v1/lease/{:016x}", id as u64));
        let dead_key = k.starts_with("v1/key/") && gone.contains(&stored_lease(v));
        !(dead_lease || dead_key)
    });
    if !stored.contains_key(REVISION_KEY) && live.get(REVISION_KEY).map(|v| &v[..]) == Some(b"1") {
        live.remove(REVISION_KEY);
    }
    prop_assert_eq!(live, stored);
    Ok(())
}

/// A lessor restored from the store at `now` shows the same state as the
/// live one: same revision and keys, same leases with the same TTLs and
/// keys, each deadline no earlier and at most TTL/2 later. Leases the live
/// lessor already sees as expired may still be alive there, within TTL/2.
fn assert_restores_same(l: &mut Lessor, store: &MemStore, now: i64) -> Result<(), TestCaseError> {
    let mut r = Lessor::restore(Config::default(), store.entries(), now, None)
        .map_err(|e| TestCaseError::fail(format!("restore failed: {e}")))?;
    let a = view(l, now);
    let b = view(&mut r, now);
    prop_assert_eq!(a.revision, b.revision);
    for (id, ttl_keys) in &a.leases {
        prop_assert_eq!(Some(ttl_keys), b.leases.get(id), "lease {}", id);
        let (x, y) = (a.ttl_ms[id], b.ttl_ms[id]);
        prop_assert!(
            x <= y && y <= x + slack(ttl_keys.0),
            "lease {}: live {} ms, restored {} ms",
            id,
            x,
            y
        );
    }
    let late: BTreeSet<i64> = b
        .leases
        .keys()
        .filter(|id| !a.leases.contains_key(id))
        .copied()
        .collect();
    for id in &late {
        prop_assert!(
            b.ttl_ms[id] <= slack(b.leases[id].0),
            "lease {} is back for {} ms",
            id,
            b.ttl_ms[id]
        );
    }
    let a_keys: BTreeMap<_, _> = a.keys.into_iter().collect();
    let b_keys: BTreeMap<_, _> = b.keys.into_iter().collect();
    for (k, e) in &a_keys {
        prop_assert_eq!(Some(e), b_keys.get(k));
    }
    for (k, e) in &b_keys {
        prop_assert!(
            a_keys.contains_key(k) || late.contains(&e.lease),
            "key {:?} is back",
            k
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Random operations against a store that refuses random writes: a
    /// refused operation changes nothing, the live state always equals the
    /// stored one, and a restore at any point shows the same state.
    #[test]
    fn storage_faults_leave_live_state_equal_to_the_store(
        steps in prop::collection::vec((op(), prop::option::weighted(0.25, 0usize..3)), 1..60),
    ) {
        let store = MemStore::default();
        let mut l = store.open(T0);
        let mut now = T0;
        for (op, fail) in steps {
            store.fail_in(fail);
            // The snapshot leaves out leases past their deadline at the
            // latest time the lessor saw: show it `now` first.
            let _ = l.leases(now);
            let before = l.snapshot(T0);
            let attempts = store.attempts();
            let res: Result<(), Error> = match op {
                Op::Grant { ttl, id } => l.grant(now, ttl, IDS[id]).map(drop),
                Op::Renew { id } => l.renew(now, IDS[id]).map(drop),
                Op::Revoke { id } => l.revoke(now, IDS[id]).map(drop),
                Op::Put { key, lease, text, if_absent } => {
                    let value: &[u8] = if text { b"t" } else { b"\x00\xff" };
                    let opts = PutOptions {
                        lease: lease.map_or(0, |i| IDS[i]),
                        text,
                        if_absent,
                        ..Default::default()
                    };
                    l.put(now, KEYS[key], value, opts).map(drop)
                }
                Op::Delete { key } => l.delete(now, KEYS[key], false).map(drop),
                Op::Checkpoint { id, remaining } => l.checkpoint(now, IDS[id], remaining).map(drop),
                Op::Tick => match l.tick(now).error {
                    Some(e) => Err(e),
                    None => Ok(()),
                },
                Op::Advance { ms } => {
                    now += ms;
                    Ok(())
                }
                Op::Restart => {
                    store.fail_in(None);
                    l = store.open(now);
                    Ok(())
                }
            };
            store.fail_in(None);
            let failed_attempts = store.attempts() - attempts;
            match res {
                Err(Error::StorageFailed(_)) => {
                    prop_assert!(fail.is_some(), "StorageFailed without an injected failure");
                    if failed_attempts == 1 {
                        // The first write was refused: nothing changed at all.
                        prop_assert_eq!(l.snapshot(T0), before);
                    }
                }
                Err(Error::LeaseNotFound(_) | Error::LeaseExists(_)) | Ok(()) => {}
                Err(e) => return Err(TestCaseError::fail(format!("{op:?}: {e:?}"))),
            }
            assert_matches_store(&mut l, &store, now)?;
            assert_restores_same(&mut l, &store, now)?;
        }
    }
}

/// A lease granted on a standby is stored with a deadline too: restarts
/// (which always come back primary) cannot keep it alive past grant + 1.5 TTL.
#[test]
fn a_lease_granted_on_a_standby_is_bounded_across_restarts() {
    let store = MemStore::default();
    let mut l = store.open(T0);
    l.demote(T0);
    let id = l.grant(T0, 10, 0).unwrap().id;
    let mut now = T0;
    while now < T0 + 16_000 {
        now += 400;
        let mut l = store.open(now);
        l.tick(now);
        if now >= T0 + 15_000 {
            assert_eq!(deadline(&mut l, now, id), None, "alive at {now}");
        }
    }
}

/// Stored names have one spelling: an uppercase lease id, a lowercase or
/// needless %-escape would let two entries name one lease or key.
#[test]
fn only_canonical_names_restore() {
    for key in [
        "v1/lease/FFFFFFFFFFFFFFFF",
        "v1/key/a%2f",
        "v1/key/%61",
        "v1/key/a%+F",
    ] {
        let value: &[u8] = if key.starts_with("v1/lease/") {
            b"ttl=10 deadline=1 remaining=0"
        } else {
            b"create=2 mod=2 version=1 lease=0000000000000000 text=0\nv"
        };
        let entries = vec![
            ("v1/revision".to_string(), b"2".to_vec()),
            (key.to_string(), value.to_vec()),
        ];
        match Lessor::restore(Config::default(), entries, T0, None) {
            Err(edge_lease_core::Error::CorruptEntry { key: k, .. }) => assert_eq!(k, key),
            other => panic!("{key}: {:?}", other.err()),
        }
    }
}

// Issue 13, item 4: a lessor without storage must still snapshot its
// renewals; a snapshot that kept grant-time deadlines lost the lease.
#[test]
fn snapshot_without_storage_keeps_renewals() {
    let mut l = Lessor::new(Config::default()).unwrap();
    let id = l.grant(T0, 10, 0).unwrap().id;
    l.put(T0, b"lock", b"me", text(id)).unwrap();
    l.renew(T0 + 9_000, id).unwrap();
    l.renew(T0 + 18_000, id).unwrap();
    let mut back = Lessor::restore(Config::default(), l.snapshot(T0), T0 + 18_000, None).unwrap();
    let ttl = back.time_to_live(T0 + 18_000, id, true).unwrap();
    assert_eq!(ttl.ttl_ms, 10_000, "restored with the renewed deadline");
    assert!(back.get(T0 + 27_999, b"lock").is_some());
}

// Hardening 3, item 10: a snapshot judges expiry at the host's time, not
// at the lessor's last call: a lease that expired while the lessor sat idle
// must not come back through it (restore gives a stored deadline up to half
// a TTL of slack: it said 4 s left), whole or in steps, store or none.
#[test]
fn snapshot_of_an_idle_lessor_leaves_out_leases_expired_since() {
    for with_store in [false, true] {
        let mut l = if with_store {
            Lessor::with_storage(Config::default(), Box::new(MemStore::default())).unwrap()
        } else {
            Lessor::new(Config::default()).unwrap()
        };
        let old = l.grant(T0, 10, 0).unwrap().id;
        l.put(T0, b"lock", b"old holder", text(old)).unwrap();
        let keep = l.grant(T0, 60, 0).unwrap().id;
        let now = T0 + 11_000; // no call since T0
        let whole = l.snapshot(now);
        let mut stepped = Vec::new();
        let mut c = l.snapshot_cursor(now);
        while l.snapshot_next(&mut c, 1, &mut stepped) {}
        for snap in [whole, stepped] {
            let mut back = Lessor::restore(Config::default(), snap, now, None).unwrap();
            assert!(back.get(now, b"lock").is_none(), "the old holder came back");
            assert_eq!(
                back.time_to_live(now, old, false),
                Err(Error::LeaseNotFound(old))
            );
            assert_eq!(back.leases(now), vec![keep]);
        }
        // As the live lessor says.
        assert!(l.get(now, b"lock").is_none());
    }
}

// Issue 13, item 5: a lease past its deadline is gone for a live lessor
// even before a tick cleans it up; its snapshot must not bring it back.
#[test]
fn snapshot_leaves_out_leases_past_their_deadline() {
    let store = MemStore::default();
    let mut l = Lessor::with_storage(Config::default(), Box::new(store.clone())).unwrap();
    let old = l.grant(T0, 10, 0).unwrap().id;
    l.put(T0, b"lock", b"old holder", text(old)).unwrap();
    let keep = l.grant(T0, 60, 0).unwrap().id;
    l.put(T0, b"other", b"x", text(keep)).unwrap();
    let now = T0 + 10_000; // `old` is gone, not yet ticked
    assert_eq!(l.renew(now, old), Err(Error::LeaseNotFound(old)));
    assert!(l.get(now, b"lock").is_none());
    let snap = l.snapshot(now);
    let mut back = Lessor::restore(Config::default(), snap, now, None).unwrap();
    assert!(back.get(now, b"lock").is_none(), "the old holder came back");
    assert_eq!(back.leases(now), vec![keep]);
    assert!(back.get(now, b"other").is_some());
    // The revision never goes back: the expiry's deletion is still to come.
    assert_eq!(back.revision(), l.revision());
}

// ---- snapshots taken in steps -------------------------------------------------

/// A store that also keeps every batch it applied, in order (a journal).
#[derive(Clone, Default)]
struct Journaled {
    store: MemStore,
    batches: Rc<RefCell<Vec<Batch>>>,
}

impl Journaled {
    /// A new lessor on a new journaled store.
    fn open() -> (Journaled, Lessor) {
        let journaled = Journaled::default();
        let l = Lessor::restore(
            Config::default(),
            Vec::<(String, Vec<u8>)>::new(),
            T0,
            Some(Box::new(journaled.clone())),
        )
        .unwrap();
        (journaled, l)
    }

    /// A store holding `snap` (each key once, or the key it holds twice as
    /// the error) with every batch journaled since applied over it, in order:
    /// what a restart after a compaction reads.
    fn over(&self, snap: Vec<(String, Vec<u8>)>) -> Result<MemStore, String> {
        let mut map = BTreeMap::new();
        for (k, v) in snap {
            if map.contains_key(&k) {
                return Err(format!("{k} twice"));
            }
            map.insert(k, v);
        }
        for batch in self.batches.borrow().iter() {
            for k in batch.deletes() {
                map.remove(k);
            }
            for (k, v) in batch.puts() {
                map.insert(k.to_string(), v.to_vec());
            }
        }
        let rebuilt = MemStore::default();
        rebuilt.0.borrow_mut().map = map;
        Ok(rebuilt)
    }
}

impl Storage for Journaled {
    fn write(&mut self, batch: &Batch) -> Result<(), String> {
        self.store.write(batch)?;
        self.batches.borrow_mut().push(batch.clone());
        Ok(())
    }
}

/// Runs one operation; its errors (an unknown lease, say) are its outcome.
fn run(l: &mut Lessor, now: &mut i64, op: Op) {
    let _ = match op {
        Op::Grant { ttl, id } => l.grant(*now, ttl, IDS[id]).map(drop),
        Op::Renew { id } => l.renew(*now, IDS[id]).map(drop),
        Op::Revoke { id } => l.revoke(*now, IDS[id]).map(drop),
        Op::Put {
            key,
            lease,
            text,
            if_absent,
        } => {
            let opts = PutOptions {
                lease: lease.map_or(0, |i| IDS[i]),
                text,
                if_absent,
                ..Default::default()
            };
            l.put(*now, KEYS[key], if text { b"t" } else { b"\x00\xff" }, opts)
                .map(drop)
        }
        Op::Delete { key } => l.delete(*now, KEYS[key], false).map(drop),
        Op::Checkpoint { id, remaining } => l.checkpoint(*now, IDS[id], remaining).map(drop),
        Op::Tick => {
            l.tick(*now);
            Ok(())
        }
        Op::Advance { ms } => {
            *now += ms;
            Ok(())
        }
        Op::Restart => Ok(()),
    };
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A snapshot taken a few entries at a time while operations go on in
    /// between (a store compacting in the background), with every batch
    /// written since it started applied over it in order (the new journal),
    /// restores the lessor as it is at the end; each entry comes once.
    #[test]
    fn a_snapshot_in_steps_plus_the_writes_since_restores_the_latest_state(
        before in prop::collection::vec(op(), 0..40),
        during in prop::collection::vec((op(), 1usize..4), 1..60),
        compact_at in prop::option::of(0usize..60),
    ) {
        let (journaled, mut l) = Journaled::open();
        let mut now = T0;
        for op in before {
            run(&mut l, &mut now, op);
        }
        let _ = l.leases(now);
        journaled.batches.borrow_mut().clear();
        let mut cursor = l.snapshot_cursor(now);
        let mut snap = Vec::new();
        let mut more = true;
        for (i, (op, n)) in during.into_iter().enumerate() {
            if more {
                more = l.snapshot_next(&mut cursor, n, &mut snap);
            }
            run(&mut l, &mut now, op);
            if compact_at == Some(i) {
                let rev = l.revision();
                let _ = l.compact(rev);
            }
        }
        while l.snapshot_next(&mut cursor, 2, &mut snap) {}
        let rebuilt = journaled.over(snap).map_err(TestCaseError::fail)?;
        let _ = l.leases(now);
        assert_restores_same(&mut l, &rebuilt, now)?;
        // Against the store that was never compacted (every batch since the
        // beginning): the same, but for leases the live lessor no longer has
        // (past their deadline, no revoke written yet), which the snapshot
        // may have left out, with their keys. A lease it kept has the same
        // keys and time: never a lease without its keys.
        let restore = |m: &MemStore| Lessor::restore(Config::default(), m.entries(), now, None).unwrap();
        let (r, f) = (view(&mut restore(&rebuilt), now), view(&mut restore(&journaled.store), now));
        prop_assert_eq!(r.revision, f.revision);
        for (id, lease) in &r.leases {
            prop_assert_eq!(Some(lease), f.leases.get(id), "lease {}", id);
            prop_assert_eq!(r.ttl_ms[id], f.ttl_ms[id], "lease {}", id);
        }
        let live = view(&mut l, now);
        let dropped: BTreeSet<i64> = f.leases.keys().filter(|id| !r.leases.contains_key(id)).copied().collect();
        for id in &dropped {
            prop_assert!(!live.leases.contains_key(id), "live lease {} left out", id);
        }
        let r_keys: BTreeMap<_, _> = r.keys.into_iter().collect();
        for (k, e) in &f.keys {
            match r_keys.get(k) {
                Some(got) => prop_assert_eq!(got, e),
                None => prop_assert!(dropped.contains(&e.lease), "key {:?} left out", k),
            }
        }
        prop_assert!(r_keys.len() <= f.keys.len());
    }
}

/// With nothing happening in between, a snapshot in steps of any size is
/// the snapshot.
#[test]
fn a_snapshot_in_steps_is_the_snapshot_when_nothing_changes() {
    let store = MemStore::default();
    let mut l = store.open(T0);
    for i in 0..50i64 {
        let id = l.grant(T0, 60, 0).unwrap().id;
        let key = format!("k{i}");
        l.put(T0, key.as_bytes(), b"v", text(id)).unwrap();
        l.put(T0, key.as_bytes(), b"w", text(id)).unwrap();
    }
    let whole = l.snapshot(T0);
    for step in [1, 2, 7, 1000] {
        let mut c = l.snapshot_cursor(T0);
        let mut parts = Vec::new();
        loop {
            let had = parts.len();
            let more = l.snapshot_next(&mut c, step, &mut parts);
            // About `step` each: a key's old version comes with it.
            assert!(parts.len() - had <= step + 1, "steps of {step}");
            if !more {
                break;
            }
        }
        assert_eq!(parts, whole, "steps of {step}");
    }
}

/// One key changed many times is split over steps like many keys are: no
/// step holds more than it was asked for (a host's step is how long its
/// event loop waits), and the steps together are the snapshot, also with
/// the key changed and another key made before it between steps.
#[test]
fn a_snapshot_in_steps_splits_one_key_with_many_versions() {
    let store = MemStore::default();
    let mut l = store.open(T0);
    l.put(T0, b"a", b"first", text(0)).unwrap();
    for i in 0..1000 {
        l.put(T0, b"hot", format!("v{i}").as_bytes(), text(0))
            .unwrap();
    }
    l.put(T0, b"z", b"last", text(0)).unwrap();
    let whole = l.snapshot(T0);
    for step in [1, 10, 333] {
        let mut c = l.snapshot_cursor(T0);
        let mut parts = Vec::new();
        loop {
            let had = parts.len();
            let more = l.snapshot_next(&mut c, step, &mut parts);
            assert!(
                parts.len() - had <= step,
                "steps of {step}: {}",
                parts.len() - had
            );
            if !more {
                break;
            }
        }
        assert_eq!(parts, whole, "steps of {step}");
    }
    // Changed between steps: every version there was at the start comes
    // once; with the writes since applied over it, the lessor as it is.
    let (journaled, mut l) = Journaled::open();
    for i in 0..300 {
        l.put(T0, b"hot", format!("v{i}").as_bytes(), text(0))
            .unwrap();
    }
    journaled.batches.borrow_mut().clear();
    let mut c = l.snapshot_cursor(T0);
    let mut snap = Vec::new();
    let mut n = 0;
    while l.snapshot_next(&mut c, 50, &mut snap) {
        n += 1;
        l.put(T0, b"hot", format!("w{n}").as_bytes(), text(0))
            .unwrap();
        l.put(T0, b"ant", format!("x{n}").as_bytes(), text(0))
            .unwrap();
    }
    assert!(n >= 6, "{n} steps");
    let rebuilt = journaled.over(snap).unwrap();
    assert_restores_same(&mut l, &rebuilt, T0).unwrap();
}

/// A lease read live at a snapshot's start whose deadline passes before its
/// key is read: the snapshot keeps both (what is expired is judged at the
/// start), so a restart within the lease's slack brings the lease back with
/// its key, as the journal would, never the lease alone.
#[test]
fn a_snapshot_in_steps_keeps_a_lease_and_its_keys_together() {
    let (journaled, mut l) = Journaled::open();
    let id = l.grant(T0, 10, 0).unwrap().id;
    l.put(T0, b"k", b"held", text(id)).unwrap();
    journaled.batches.borrow_mut().clear();
    let mut c = l.snapshot_cursor(T0);
    let mut snap = Vec::new();
    // The revision and the lease.
    assert!(l.snapshot_next(&mut c, 2, &mut snap));
    assert!(snap.iter().any(|(k, _)| k.starts_with("v1/lease/")));
    // Past its deadline, no tick yet: nothing is written.
    let now = T0 + 10_500;
    assert!(l.leases(now).is_empty());
    while l.snapshot_next(&mut c, 1, &mut snap) {}
    assert!(journaled.batches.borrow().is_empty());
    let store = MemStore::default();
    store.0.borrow_mut().map = snap.into_iter().collect();
    let mut back = Lessor::restore(Config::default(), store.entries(), now, None).unwrap();
    // Within its slack the lease is back, with its key.
    let ttl = back.time_to_live(now, id, true).unwrap();
    assert_eq!(
        ttl.keys.iter().map(|k| k.to_vec()).collect::<Vec<_>>(),
        vec![b"k".to_vec()]
    );
    assert_eq!(
        back.get(now, b"k").map(|e| e.value.to_vec()),
        Some(b"held".to_vec())
    );
}
