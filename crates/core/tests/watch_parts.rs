//! A revision with more changes than a poll hands one watcher (a revoke of
//! a lease with many keys) is handed out in parts: each part marked
//! `partial` but the last, together every change of the revision once, in
//! order, then the revisions after it.

use edge_lease_core::{Config, Lessor, Op, PutOptions, PutRequest, TxnRequest, WatchRequest};

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

/// A watcher's batches with their parts joined: (events as (key,
/// revision), whether each has its previous entry) per batch.
type Joined = Vec<Vec<(Vec<u8>, i64, bool)>>;

/// The most a poll makes past its budget (1 MiB): its first event, which
/// goes out whatever its size, or the event that crossed it.
const POLL_BYTES: usize = 1 << 20;

/// Polls until nothing is pending, checking each poll's bytes; per watcher
/// id (in `ids`), its joined batches; and per poll, each watcher's event
/// indexes.
fn drain_joined(
    l: &mut Lessor,
    ids: &[i64],
    biggest: usize,
) -> (Vec<Joined>, Vec<Vec<Vec<usize>>>) {
    let mut out = vec![Joined::new(); ids.len()];
    let mut open = vec![false; ids.len()];
    let mut polls = Vec::new();
    for _ in 0..10_000 {
        let p = l.poll_watches();
        let made: usize = p.events.iter().map(|e| e.bytes()).sum();
        assert!(made <= POLL_BYTES + biggest, "a poll made {made} bytes");
        let mut mine = vec![Vec::new(); ids.len()];
        for b in &p.batches {
            let w = ids.iter().position(|&id| id == b.id).unwrap();
            let evs = p
                .events_of(b)
                .map(|e| (e.key.to_vec(), e.revision, e.prev.is_some()));
            if !open[w] {
                out[w].push(Vec::new());
            }
            out[w].last_mut().unwrap().extend(evs);
            open[w] = b.partial;
            mine[w] = b.events.clone();
        }
        polls.push(mine);
        if !l.watches_pending() {
            assert!(open.iter().all(|o| !o), "a batch left open");
            return (out, polls);
        }
    }
    panic!("still pending after 10,000 polls");
}

#[test]
fn a_catch_up_over_large_values_comes_in_polls_of_about_a_mebibyte_that_join_into_etcds_batches() {
    let big = vec![b'v'; 64 * 1024];
    let mut l = Lessor::new(Config::default()).unwrap();
    // 40 revisions of one 64 KiB put, one of 24 (1.5 MiB in one revision),
    // then 1,200 small ones: 2.7 MiB of history and more than a batch's
    // 1,000 revisions.
    for i in 0..40 {
        l.put(T0, &key(i), &big, PutOptions::default()).unwrap();
    }
    let puts = (0..24)
        .map(|i| {
            Op::Put(PutRequest {
                key: key(100 + i),
                value: big.clone(),
                options: PutOptions::default(),
            })
        })
        .collect();
    let txn = l
        .txn(
            T0,
            &TxnRequest {
                success: puts,
                ..Default::default()
            },
        )
        .unwrap();
    for i in 0..1_200 {
        l.put(T0, &key(i % 50), b"small", PutOptions::default())
            .unwrap();
    }
    let from = |start_revision, prev_kv| WatchRequest {
        key: b"k/".to_vec(),
        range_end: b"k0".to_vec(),
        start_revision,
        prev_kv,
        ..Default::default()
    };
    let ids = [
        l.watch(&from(1, false)).unwrap(),
        l.watch(&from(1, false)).unwrap(),
        l.watch(&from(1, true)).unwrap(),
        // Sparse: one key of the big revision, from far back.
        l.watch(&WatchRequest {
            key: key(123),
            start_revision: 1,
            ..Default::default()
        })
        .unwrap(),
        // Starts inside the first batch of the others.
        l.watch(&from(20, false)).unwrap(),
    ];
    let (got, polls) = drain_joined(&mut l, &ids, 2 * (big.len() + 8));

    // What each watcher must get, in etcd's batches of at most 1,000
    // revisions with changes in range.
    let all = l.watch(&from(1, true)).unwrap();
    let history: Vec<(Vec<u8>, i64, bool)> = {
        let (mut h, _) = drain_joined(&mut l, &[all], 2 * (big.len() + 8));
        h.remove(0).concat()
    };
    let batches = |first: i64, prev: bool| -> Joined {
        let evs: Vec<_> = history
            .iter()
            .filter(|e| e.1 >= first)
            .map(|e| (e.0.clone(), e.1, e.2 && prev))
            .collect();
        let mut out: Joined = Vec::new();
        let mut revs = 0;
        let mut last = 0;
        for e in evs {
            if e.1 != last {
                if revs % 1000 == 0 {
                    out.push(Vec::new());
                }
                revs += 1;
                last = e.1;
            }
            out.last_mut().unwrap().push(e);
        }
        out
    };
    assert_eq!(history.len(), 40 + 24 + 1_200);
    assert_eq!(got[0], batches(1, false));
    assert_eq!(got[1], got[0]);
    assert_eq!(got[2], batches(1, true));
    assert_eq!(got[3], vec![vec![(key(123), txn.revision, false)]]);
    assert_eq!(got[4], batches(20, false));
    // The big revision is one batch's middle, whole.
    assert_eq!(got[0][0].iter().filter(|e| e.1 == txn.revision).count(), 24);
    // Several polls, the two alike watchers sharing every event of each.
    assert!(polls.len() >= 4, "{} polls", polls.len());
    assert!(polls.iter().all(|p| p[0] == p[1]));
}
