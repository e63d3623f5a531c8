//! The lessor's counts against etcd 3.4.23's metrics: each step below is a
//! call made to a real etcd 3.4.23, with the change its
//! `etcd_debugging_mvcc_*` and lease counters showed after it (measured
//! through the JSON gateway, 2026-11-26). The server's differential test
//! (tests/etcd/metrics.test.mjs) compares the same counters live.

use edge_lease_core::{
    Compare, CompareResult, CompareTarget, Config, DeleteRequest, Error, Lessor, Op, PutOptions,
    PutRequest, RangeRequest, TxnRequest, WatchRequest,
};

const T0: i64 = 1_700_000_000_000;

fn put(key: &str, value: &str, options: PutOptions) -> PutRequest {
    PutRequest {
        key: key.into(),
        value: value.into(),
        options,
    }
}

fn range(key: &str) -> RangeRequest {
    RangeRequest {
        key: key.into(),
        ..Default::default()
    }
}

fn version_is(key: &str, result: CompareResult, v: i64) -> Compare {
    Compare {
        key: key.into(),
        range_end: Vec::new(),
        target: CompareTarget::Version(v),
        result,
    }
}

fn txn(compare: Vec<Compare>, success: Vec<Op>) -> TxnRequest {
    TxnRequest {
        compare,
        success,
        failure: Vec::new(),
    }
}

/// Runs `f` and returns how the counts moved, in `Counts::fields`'s order
/// (ranges, puts, deletes, txns, put bytes, granted, revoked, renewed, expired).
fn delta<T>(l: &mut Lessor, f: impl FnOnce(&mut Lessor) -> T) -> [u64; 9] {
    let a = l.counts().fields();
    f(l);
    let b = l.counts().fields();
    std::array::from_fn(|i| b[i] - a[i])
}

#[test]
fn kv_calls_count_as_etcd_counts_them() {
    let mut l = Lessor::new(Config::default()).unwrap();
    let eq = CompareResult::Equal;
    let prev = PutOptions {
        prev: true,
        ..Default::default()
    };
    let ignore_value = PutOptions {
        ignore_value: true,
        ..Default::default()
    };
    let ignore_lease = PutOptions {
        ignore_lease: true,
        ..Default::default()
    };
    //                                             range put del txn bytes
    let d = delta(&mut l, |l| {
        l.put_kv(T0, &put("a", "vv", PutOptions::default()))
    });
    assert_eq!(d, [0, 1, 0, 0, 3, 0, 0, 0, 0], "put");
    let d = delta(&mut l, |l| l.put_kv(T0, &put("a", "vv", prev)));
    assert_eq!(d, [1, 1, 0, 1, 3, 0, 0, 0, 0], "put prev_kv");
    let d = delta(&mut l, |l| l.put_kv(T0, &put("a", "", ignore_value)));
    assert_eq!(
        d,
        [1, 1, 0, 1, 3, 0, 0, 0, 0],
        "put ignore_value: the kept value counts"
    );
    let d = delta(&mut l, |l| l.put_kv(T0, &put("a", "ww", ignore_lease)));
    assert_eq!(d, [1, 1, 0, 1, 3, 0, 0, 0, 0], "put ignore_lease");
    let d = delta(&mut l, |l| {
        assert_eq!(
            l.put_kv(T0, &put("zz", "", ignore_value)),
            Err(Error::KeyNotFound)
        );
    });
    assert_eq!(
        d,
        [1, 0, 0, 0, 0, 0, 0, 0, 0],
        "put ignore_value of a missing key"
    );
    let d = delta(&mut l, |l| {
        let lease = PutOptions {
            lease: 99,
            ..Default::default()
        };
        assert!(l.put_kv(T0, &put("k", "1", lease)).is_err());
    });
    assert_eq!(d, [0; 9], "put with an unknown lease");

    let d = delta(&mut l, |l| l.range_kv(T0, &range("a")));
    assert_eq!(d, [1, 0, 0, 0, 0, 0, 0, 0, 0], "range");
    let d = delta(&mut l, |l| {
        let future = RangeRequest {
            revision: 999,
            ..range("a")
        };
        assert!(l.range_kv(T0, &future).is_err());
    });
    assert_eq!(d, [1, 0, 0, 0, 0, 0, 0, 0, 0], "range at a future revision");

    let del = |key: &str, prev_kv| DeleteRequest {
        key: key.into(),
        range_end: Vec::new(),
        prev_kv,
    };
    let d = delta(&mut l, |l| l.delete_range(T0, &del("nothing", false)));
    assert_eq!(d, [0, 0, 1, 0, 0, 0, 0, 0, 0], "delete of nothing");
    l.put_kv(T0, &put("b", "1", PutOptions::default())).unwrap();
    let d = delta(&mut l, |l| l.delete_range(T0, &del("b", true)));
    assert_eq!(d, [1, 0, 1, 1, 0, 0, 0, 0, 0], "delete prev_kv");

    // Read-only txns: one store transaction; compares stop at the first that fails.
    let both = vec![version_is("x", eq, 0), version_is("y", eq, 0)];
    let d = delta(&mut l, |l| {
        l.txn(T0, &txn(both.clone(), vec![Op::Range(range("a"))]))
    });
    assert_eq!(
        d,
        [3, 0, 0, 1, 0, 0, 0, 0, 0],
        "read txn: 2 compares and a range"
    );
    let first_fails = vec![
        version_is("a", CompareResult::Greater, 50),
        version_is("y", eq, 0),
    ];
    let d = delta(&mut l, |l| {
        l.txn(T0, &txn(first_fails, vec![Op::Range(range("a"))]))
    });
    assert_eq!(
        d,
        [1, 0, 0, 0, 0, 0, 0, 0, 0],
        "read txn whose first compare fails"
    );
    let d = delta(&mut l, |l| {
        l.txn(
            T0,
            &txn(vec![version_is("x", eq, 0)], vec![Op::Range(range("a"))]),
        )
    });
    assert_eq!(
        d,
        [2, 0, 0, 1, 0, 0, 0, 0, 0],
        "read txn: a compare and a range"
    );
    let d = delta(&mut l, |l| l.txn(T0, &txn(vec![], vec![])));
    assert_eq!(d, [0; 9], "empty txn");

    // Txns that write: compares (and checks) in a read of their own.
    let d = delta(&mut l, |l| {
        l.txn(
            T0,
            &txn(
                both.clone(),
                vec![Op::Put(put("c", "123", PutOptions::default()))],
            ),
        )
    });
    assert_eq!(d, [2, 1, 0, 1, 4, 0, 0, 0, 0], "txn: 2 compares, a put");
    let d = delta(&mut l, |l| {
        let ops = vec![
            Op::Put(put("c", "1", PutOptions::default())),
            Op::Put(put("d", "1", PutOptions::default())),
        ];
        l.txn(T0, &txn(vec![version_is("x", eq, 0)], ops))
    });
    assert_eq!(d, [1, 2, 0, 1, 4, 0, 0, 0, 0], "txn: a compare, two puts");
    let d = delta(&mut l, |l| {
        l.txn(T0, &txn(vec![], vec![Op::Put(put("c", "", ignore_value))]))
    });
    assert_eq!(
        d,
        [2, 1, 0, 1, 2, 0, 0, 0, 0],
        "txn put ignore_value: checked, then read"
    );
    let d = delta(&mut l, |l| {
        let missing = txn(
            vec![version_is("a", CompareResult::NotEqual, 0)],
            vec![Op::Put(put("nope", "", ignore_value))],
        );
        assert_eq!(l.txn(T0, &missing), Err(Error::KeyNotFound));
    });
    assert_eq!(
        d,
        [2, 0, 0, 1, 0, 0, 0, 0, 0],
        "txn put ignore_value of a missing key"
    );
    let d = delta(&mut l, |l| {
        let nested = TxnRequest {
            compare: vec![version_is("x", eq, 0)],
            success: vec![Op::Put(put("e", "1", PutOptions::default()))],
            failure: vec![],
        };
        l.txn(T0, &txn(vec![], vec![Op::Txn(nested)]))
    });
    assert_eq!(
        d,
        [1, 1, 0, 0, 2, 0, 0, 0, 0],
        "nested txn: its compare in the read"
    );
    let d = delta(&mut l, |l| {
        let nested = txn(vec![], vec![Op::Range(range("a"))]);
        l.txn(T0, &txn(vec![], vec![Op::Txn(nested)]))
    });
    assert_eq!(
        d,
        [1, 0, 0, 0, 0, 0, 0, 0, 0],
        "a nested txn makes a txn a write"
    );
    let d = delta(&mut l, |l| {
        l.txn(T0, &txn(vec![], vec![Op::Delete(del("e", true))]))
    });
    assert_eq!(d, [1, 0, 1, 1, 0, 0, 0, 0, 0], "txn delete prev_kv");

    let rev = l.revision();
    let d = delta(&mut l, |l| l.compact(rev - 1));
    assert_eq!(d, [1, 0, 0, 0, 0, 0, 0, 0, 0], "compact");
    let d = delta(&mut l, |l| assert!(l.compact(rev - 1).is_err()));
    assert_eq!(d, [0; 9], "compact refused");
}

#[test]
fn lease_calls_count_as_etcd_counts_them() {
    let mut l = Lessor::new(Config::default()).unwrap();
    //                                             range put del txn bytes granted revoked renewed expired
    let d = delta(&mut l, |l| l.grant(T0, 5, 7));
    assert_eq!(d, [0, 0, 0, 0, 0, 1, 0, 0, 0], "grant");
    let d = delta(&mut l, |l| assert!(l.grant(T0, 5, 7).is_err()));
    assert_eq!(d, [0; 9], "grant of a live id");
    l.grant(T0, 60, 8).unwrap();
    l.grant(T0, 60, 9).unwrap();
    for (k, lease) in [("k1", 7), ("k2", 7), ("k3", 8)] {
        let o = PutOptions {
            lease,
            ..Default::default()
        };
        l.put_kv(T0, &put(k, "1", o)).unwrap();
    }
    let d = delta(&mut l, |l| l.renew(T0, 8));
    assert_eq!(d, [0, 0, 0, 0, 0, 0, 0, 1, 0], "keepalive");
    let d = delta(&mut l, |l| assert!(l.renew(T0, 99).is_err()));
    assert_eq!(d, [0; 9], "keepalive of an unknown lease");
    let d = delta(&mut l, |l| l.time_to_live(T0, 8, true));
    assert_eq!(d, [0; 9], "timetolive");
    let d = delta(&mut l, |l| l.revoke(T0, 8));
    assert_eq!(d, [0, 0, 1, 0, 0, 0, 1, 0, 0], "revoke, one key");
    let d = delta(&mut l, |l| l.revoke(T0, 9));
    assert_eq!(d, [0, 0, 0, 0, 0, 0, 1, 0, 0], "revoke, no keys");
    let d = delta(&mut l, |l| assert!(l.revoke(T0, 9).is_err()));
    assert_eq!(d, [0; 9], "revoke of an unknown lease");
    let d = delta(&mut l, |l| assert_eq!(l.tick(T0 + 10_000).expired.len(), 1));
    assert_eq!(d, [0, 0, 2, 1, 0, 0, 1, 0, 1], "expiry, two keys");
}

#[test]
fn a_write_the_quota_refuses_counts_nothing() {
    // (etcd refuses it before its store sees it.)
    let mut l = Lessor::new(Config {
        quota_bytes: 256,
        max_key_bytes: 16,
        max_value_bytes: 256,
        ..Default::default()
    })
    .unwrap();
    let big = "x".repeat(250);
    let eq = CompareResult::Equal;
    let d = delta(&mut l, |l| {
        let t = txn(
            vec![version_is("a", eq, 0), version_is("b", eq, 0)],
            vec![Op::Put(put("c", &big, PutOptions::default()))],
        );
        assert_eq!(l.txn(T0, &t), Err(Error::NoSpace));
        assert_eq!(
            l.put_kv(T0, &put("c", &big, PutOptions::default())),
            Err(Error::NoSpace)
        );
    });
    assert_eq!(d, [0; 9]);
}

#[test]
fn prev_kv_watchers_read_each_previous_version_but_a_creations() {
    // etcd's watch stream reads the previous version of each event it
    // sends a prev_kv watcher (a range), except for an event that created
    // its key.
    let mut l = Lessor::new(Config::default()).unwrap();
    let watch = |l: &mut Lessor, prev_kv| {
        let req = WatchRequest {
            key: b"k".to_vec(),
            range_end: Vec::new(),
            start_revision: 0,
            prev_kv,
            no_put: false,
            no_delete: false,
        };
        l.watch(&req).unwrap()
    };
    watch(&mut l, true);
    watch(&mut l, false);
    let d = delta(&mut l, |l| {
        l.put_kv(T0, &put("k", "1", PutOptions::default())).unwrap(); // creates k
        l.put_kv(T0, &put("k", "2", PutOptions::default())).unwrap();
        let gone = DeleteRequest {
            key: b"k".to_vec(),
            range_end: Vec::new(),
            prev_kv: false,
        };
        l.delete_range(T0, &gone).unwrap();
        let polled = l.poll_watches();
        assert_eq!(
            polled.batches.iter().map(|b| b.events.len()).sum::<usize>(),
            6
        );
    });
    assert_eq!(d, [2, 2, 1, 0, 4, 0, 0, 0, 0]);
}
