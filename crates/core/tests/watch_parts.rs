//! A revision with more changes than a poll hands one watcher (a revoke of
//! a lease with many keys) is handed out in parts: each part marked
//! `partial` but the last, together every change of the revision once, in
//! order, then the revisions after it.

use edge_lease_core::{Config, Lessor, PutOptions, WatchRequest};

const T0: i64 = 1_700_000_000_000;
const N: usize = 10_000;

fn key(i: usize) -> Vec<u8> {
    format!("k/{i:05}").into_bytes()
}

/// A batch as `drain` gives it.
type Got = (i64, Vec<(Vec<u8>, i64)>, bool, bool);

/// Polls until nothing is pending: per watcher id, its batches as (keys
/// with their revisions, partial, whether each delete has its previous
/// entry).
fn drain(l: &mut Lessor) -> Vec<Got> {
    let mut out = Vec::new();
    for _ in 0..100 {
        let p = l.poll_watches();
        for b in &p.batches {
            let evs: Vec<_> = p
                .events_of(b)
                .map(|e| (e.key.to_vec(), e.revision))
                .collect();
            let prevs = p
                .events_of(b)
                .filter(|e| e.entry.is_none())
                .all(|e| e.prev.is_some());
            out.push((b.id, evs, b.partial, prevs));
        }
        if !l.watches_pending() {
            return out;
        }
    }
    panic!("still pending after 100 polls");
}

#[test]
fn a_big_revision_comes_in_parts_that_join_into_it() {
    let cfg = Config {
        max_keys_per_lease: N,
        ..Config::default()
    };
    let mut l = Lessor::new(cfg).unwrap();
    let g = l.grant(T0, 60, 0.into()).unwrap();
    for i in 0..N {
        let opts = PutOptions {
            lease: g.id,
            ..Default::default()
        };
        l.put(T0, &key(i), b"v", opts).unwrap();
    }
    let all = WatchRequest {
        key: b"k/".to_vec(),
        range_end: b"k0".to_vec(),
        ..Default::default()
    };
    let plain = l.watch(&all).unwrap();
    let prev = l
        .watch(&WatchRequest {
            prev_kv: true,
            ..all.clone()
        })
        .unwrap();
    let one = l
        .watch(&WatchRequest {
            key: key(N - 1),
            ..Default::default()
        })
        .unwrap();
    let r = l.revoke(T0, g.id).unwrap();
    l.put(T0, &key(0), b"after", PutOptions::default()).unwrap();
    let got = drain(&mut l);

    for id in [plain, prev] {
        let mine: Vec<_> = got.iter().filter(|b| b.0 == id).collect();
        // Parts of at most about a poll's worth each, all but the last partial.
        assert!(mine.len() >= 3, "{} batches", mine.len());
        let (last, parts) = mine.split_last().unwrap();
        assert!(parts.iter().all(|b| b.2 && b.1.len() <= 4096));
        assert!(!last.2);
        assert!(parts.iter().all(|b| b.3 == (id == prev)));
        // Joined: every delete of the revoke once, in key order, then the put.
        let joined: Vec<_> = mine.iter().flat_map(|b| b.1.clone()).collect();
        let mut want: Vec<_> = (0..N).map(|i| (key(i), r.revision)).collect();
        want.push((key(0), r.revision + 1));
        assert_eq!(joined, want);
    }
    // A watcher that wants one key of it gets it in one batch.
    let mine: Vec<_> = got.iter().filter(|b| b.0 == one).collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].1, [(key(N - 1), r.revision)]);
    assert!(!mine[0].2);
}

#[test]
fn a_compaction_between_parts_neither_repeats_nor_loses_a_change() {
    let cfg = Config {
        max_keys_per_lease: N,
        history: i64::MAX,
        ..Config::default()
    };
    let mut l = Lessor::new(cfg).unwrap();
    let g = l.grant(T0, 60, 0.into()).unwrap();
    for i in 0..N {
        let opts = PutOptions {
            lease: g.id,
            ..Default::default()
        };
        l.put(T0, &key(i), b"v", opts).unwrap();
    }
    let w = l
        .watch(&WatchRequest {
            key: b"k/".to_vec(),
            range_end: b"k0".to_vec(),
            ..Default::default()
        })
        .unwrap();
    let r = l.revoke(T0, g.id).unwrap();
    let first = l.poll_watches();
    assert!(first.batches.iter().all(|b| b.id == w && b.partial));
    let mut joined: Vec<_> = first
        .batches
        .iter()
        .flat_map(|b| first.events_of(b).map(|e| e.key.to_vec()))
        .collect();
    // As far as watchers allow: the revision before the revoke.
    l.compact(r.revision - 1).unwrap();
    while l.compact_step(usize::MAX).unwrap() > 0 {}
    for (_, evs, _, _) in drain(&mut l) {
        joined.extend(evs.into_iter().map(|(k, _)| k));
    }
    assert_eq!(joined, (0..N).map(key).collect::<Vec<_>>());
}
