//! Stores written by earlier releases restore to the state they held.
//!
//! `fixtures/text-layout.tsv` holds the entries a store had after `script`,
//! as the release with the text value layout wrote them (commit 291641f,
//! `cargo test -p edge-lease-core --test layouts -- --ignored`); it is kept
//! as it is, so every later release is tested against what that one wrote.
//! One entry a line: its key, a tab, its value in hex.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use edge_lease_core::{
    Config, DeleteRequest, Entry, Lessor, Op, PutOptions, PutRequest, TxnRequest,
};

mod common;
use common::MemStore;

const T0: i64 = 1_700_000_000_000;
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/text-layout.tsv"
);

fn opts(lease: i64, text: bool) -> PutOptions {
    PutOptions {
        lease,
        text,
        ..Default::default()
    }
}

/// Every kind of record: leases with extreme ids, a checkpoint, text and
/// byte values, escaped key names, superseded versions, a delete, two
/// changes of one key in one revision, a compaction point and a host entry.
fn script(store: &MemStore) {
    let mut l = Lessor::with_storage(Config::default(), Box::new(store.clone())).unwrap();
    l.grant(T0, 10, -1).unwrap();
    l.grant(T0, 3, i64::MIN).unwrap();
    l.grant(T0, 9_000_000_000, i64::MAX).unwrap();
    l.grant(T0, 60, 0x1234_5678_9abc_def0).unwrap();
    l.put(T0, b"a b", "t\u{e9}xt".as_bytes(), opts(-1, true))
        .unwrap();
    l.put(T0, b"\x00bin", b"\xff\n\x01", opts(i64::MIN, false))
        .unwrap();
    l.put(T0, b"svc/long", &[7u8; 300], opts(i64::MAX, false))
        .unwrap();
    l.put(T0, b"empty", b"", opts(0, true)).unwrap();
    l.put(T0, b"free", b"v", opts(0, false)).unwrap();
    l.put(T0, b"free", b"w", opts(0, true)).unwrap();
    l.put(T0, b"gone", b"x", opts(0, false)).unwrap();
    l.delete(T0, b"gone", false).unwrap();
    let txn = TxnRequest {
        compare: vec![],
        success: vec![
            Op::Delete(DeleteRequest {
                key: b"free".to_vec(),
                range_end: vec![0],
                prev_kv: false,
            }),
            Op::Put(PutRequest {
                key: b"free".to_vec(),
                value: b"again".to_vec(),
                options: opts(0x1234_5678_9abc_def0, false),
            }),
        ],
        failure: vec![],
    };
    l.txn(T0, &txn).unwrap();
    l.put(T0, b"free", b"z", opts(0, false)).unwrap();
    l.put(T0, b"old", b"1", opts(0, false)).unwrap();
    l.put(T0, b"old", b"2", opts(0, false)).unwrap();
    l.compact(3).unwrap();
    l.checkpoint(T0, i64::MIN, 1_500).unwrap();
    l.set_host_entry("alarms", Some(b"[]\n\xff")).unwrap();
}

/// What a restored lessor holds: leases, live keys, every version held,
/// the compaction point and the host entry.
#[derive(Debug, PartialEq)]
struct State {
    revision: i64,
    compacted: i64,
    /// id -> (granted ttl, ms left, keys)
    leases: BTreeMap<i64, (i64, i64, Vec<Vec<u8>>)>,
    keys: Vec<(Vec<u8>, Entry)>,
    versions: Vec<(i64, u32, Vec<u8>, Option<Entry>)>,
    host: Option<Vec<u8>>,
}

fn state(l: &mut Lessor, now: i64) -> State {
    let mut leases = BTreeMap::new();
    for id in l.leases(now) {
        let t = l.time_to_live(now, id, true).unwrap();
        let keys = t.keys.iter().map(|k| k.to_vec()).collect();
        leases.insert(id, (t.granted_ttl, t.ttl_ms, keys));
    }
    let keys = l
        .range(now, b"")
        .into_iter()
        .map(|(k, e)| (k.to_vec(), e.clone()))
        .collect();
    let versions = l
        .versions(i64::MAX)
        .into_iter()
        .map(|(r, s, k, e)| (r, s, k.to_vec(), e.cloned()))
        .collect();
    State {
        revision: l.revision(),
        compacted: l.compacted(),
        leases,
        keys,
        versions,
        host: l.host_entry("alarms").map(<[u8]>::to_vec),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn fixture() -> Vec<(String, Vec<u8>)> {
    std::fs::read_to_string(FIXTURE)
        .unwrap()
        .lines()
        .map(|line| {
            let (k, v) = line.split_once('\t').unwrap();
            (k.to_string(), unhex(v))
        })
        .collect()
}

/// Writes the fixture with this build (see the module's comment: kept as
/// the text layout's release wrote it, not rewritten).
#[test]
#[ignore]
fn write_fixture() {
    let store = MemStore::default();
    script(&store);
    let lines: String = store
        .entries()
        .iter()
        .map(|(k, v)| format!("{k}\t{}\n", hex(v)))
        .collect();
    std::fs::write(FIXTURE, lines).unwrap();
}

fn restore(entries: Vec<(String, Vec<u8>)>, now: i64) -> Lessor {
    Lessor::restore(Config::default(), entries, now, None).unwrap()
}

#[test]
fn a_text_layout_store_restores_to_the_state_it_held() {
    let old = fixture();
    assert!(old
        .iter()
        .any(|(k, v)| k.starts_with("v1/key/") && v.starts_with(b"create=")));
    let now = T0 + 1_000;
    let store = MemStore::default();
    script(&store);
    let want = state(&mut restore(store.entries(), now), now);
    assert_eq!(want.leases.len(), 4);
    assert!(want.versions.len() > want.keys.len());
    let mut back = restore(old.clone(), now);
    assert_eq!(state(&mut back, now), want);
    // Its snapshot (this build's layout) restores to the same state again.
    let snap = back.snapshot(now);
    assert_eq!(state(&mut restore(snap, now), now), want);
}

#[test]
fn a_store_mixing_layouts_restores() {
    // A text-layout store that this build has written over: the records
    // it rewrote are in its layout, the rest as they were.
    let now = T0 + 1_000;
    let store = MemStore::default();
    for (k, v) in fixture() {
        store.0.borrow_mut().insert(k, v);
    }
    let mut l = Lessor::restore(
        Config::default(),
        store.entries(),
        now,
        Some(Box::new(store.clone())),
    )
    .unwrap();
    l.put(now, b"free", b"later", opts(-1, true)).unwrap();
    l.renew(now, i64::MAX).unwrap();
    let want = state(&mut l, now);
    drop(l);
    let mut back = restore(store.entries(), now);
    assert_eq!(state(&mut back, now), want);
}
