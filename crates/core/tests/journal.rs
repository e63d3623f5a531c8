//! A restore from a snapshot and the journal of batches written after it
//! (`Restore::journal`, a Durable Object's layout): the same lessor as a
//! restore from the store the batches were applied to.

#![cfg(not(target_arch = "wasm32"))] // proptest is a native-only dev-dependency

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use edge_lease_core::{
    Batch, Config, DeleteRequest, Error, Lessor, Op as TxnOp, PutOptions, PutRequest, Restore,
    Storage, TxnRequest,
};
use proptest::prelude::*;

const T0: i64 = 1_700_000_000_000;

/// The store applied batch by batch, and the same as a snapshot taken at
/// some point with every batch since kept packed.
#[derive(Default)]
struct Stores {
    whole: BTreeMap<String, Vec<u8>>,
    snapshot: Vec<(String, Vec<u8>)>,
    journal: Vec<Vec<u8>>,
    /// Each batch journaled as two, its deletes then its puts (as a host
    /// splits a batch too large for one row).
    split: bool,
}

#[derive(Clone, Default)]
struct Journaled(Rc<RefCell<Stores>>);

impl Storage for Journaled {
    fn write(&mut self, batch: &Batch) -> Result<(), String> {
        let mut s = self.0.borrow_mut();
        for k in batch.deletes() {
            s.whole.remove(k);
        }
        for (k, v) in batch.puts() {
            s.whole.insert(k.to_string(), v.to_vec());
        }
        if s.split {
            let (mut deletes, mut puts) = (Batch::default(), Batch::default());
            batch.deletes().for_each(|k| deletes.delete(k));
            batch.puts().for_each(|(k, v)| puts.put(k, v));
            for b in [deletes, puts] {
                s.journal.push(packed(&b));
            }
        } else {
            s.journal.push(packed(batch));
        }
        Ok(())
    }
}

/// In name order (a snapshot lists leases in the order of their table).
fn sorted(mut v: Vec<(String, Vec<u8>)>) -> Vec<(String, Vec<u8>)> {
    v.sort();
    v
}

fn packed(b: &Batch) -> Vec<u8> {
    let mut out = Vec::new();
    b.pack_into(&mut out);
    out
}

impl Journaled {
    /// The snapshot moves to now: the journal starts again.
    fn compact(&self) {
        let mut s = self.0.borrow_mut();
        s.snapshot = s
            .whole
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        s.journal.clear();
    }

    /// The lessor from the snapshot and the journal over it.
    fn restore(&self, now: i64) -> Result<Lessor, Error> {
        let s = self.0.borrow();
        let mut r = Restore::default();
        for b in &s.journal {
            r.journal(b)?;
        }
        for (k, v) in &s.snapshot {
            r.add(k, v)?;
        }
        r.finish(Config::default(), now, None)
    }

    /// The lessor from the store as the batches left it.
    fn restore_whole(&self, now: i64) -> Lessor {
        let entries: Vec<_> = self.0.borrow().whole.clone().into_iter().collect();
        Lessor::restore(Config::default(), entries, now, None).unwrap()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Grant {
        ttl: i64,
    },
    Put {
        key: usize,
        lease: Option<usize>,
    },
    Delete {
        key: usize,
    },
    /// A from-key delete and a put of a key in it, in one revision.
    DeleteFromAndPut {
        from: usize,
        key: usize,
    },
    Revoke {
        lease: usize,
    },
    Advance {
        ms: i64,
    },
    Compact,
    Split(bool),
}

const KEYS: [&[u8]; 5] = [b"a", b"b", b"c/d", b"e f", b"\xff"];

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    prop_oneof![
        2 => (1i64..8).prop_map(|ttl| Op::Grant { ttl }),
        5 => (key.clone(), prop::option::weighted(0.6, 0usize..4)).prop_map(|(key, lease)| Op::Put { key, lease }),
        2 => key.clone().prop_map(|key| Op::Delete { key }),
        1 => (key.clone(), key).prop_map(|(from, key)| Op::DeleteFromAndPut { from, key }),
        1 => (0usize..4).prop_map(|lease| Op::Revoke { lease }),
        2 => (0i64..5_000).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Compact),
        1 => any::<bool>().prop_map(Op::Split),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// After any operations, with the snapshot taken at any point between
    /// them, the snapshot and the journal restore the lessor the store
    /// restores: the same entries, to the byte.
    #[test]
    fn snapshot_and_journal_restore_the_store(ops in prop::collection::vec(op(), 1..40)) {
        let store = Journaled::default();
        let mut l = Lessor::with_storage(Config::default(), Box::new(store.clone())).unwrap();
        let mut leases = Vec::new();
        let mut now = T0;
        for op in ops {
            let lease = |i: Option<usize>| i.and_then(|i| leases.get(i).copied()).unwrap_or(0);
            // Failures (a lease gone, a txn refused) change nothing: as any caller sees them.
            let _ = match op {
                Op::Grant { ttl } => l.grant(now, ttl, 0).map(|g| leases.push(g.id)),
                Op::Put { key, lease: i } => {
                    let opts = PutOptions { lease: lease(i), ..Default::default() };
                    l.put(now, KEYS[key], b"v", opts).map(drop)
                }
                Op::Delete { key } => l.delete(now, KEYS[key], false).map(drop),
                Op::DeleteFromAndPut { from, key } => {
                    let del = DeleteRequest { key: KEYS[from].to_vec(), range_end: vec![0], prev_kv: false };
                    let put = PutRequest { key: KEYS[key].to_vec(), value: b"w".to_vec(), options: PutOptions::default() };
                    let req = TxnRequest { compare: vec![], success: vec![TxnOp::Delete(del), TxnOp::Put(put)], failure: vec![] };
                    l.txn(now, &req).map(drop)
                }
                Op::Revoke { lease: i } => l.revoke(now, lease(Some(i))).map(drop),
                Op::Advance { ms } => {
                    now += ms;
                    l.tick(now);
                    Ok(())
                }
                Op::Compact => {
                    store.compact();
                    Ok(())
                }
                Op::Split(split) => {
                    store.0.borrow_mut().split = split;
                    Ok(())
                }
            };
            let journaled = store.restore(now).map_err(|e| TestCaseError::fail(format!("restore failed: {e}")))?;
            let whole = store.restore_whole(now);
            prop_assert_eq!(sorted(journaled.snapshot(now)), sorted(whole.snapshot(now)));
        }
    }
}

#[test]
fn a_batch_reads_back_as_written() {
    let mut b = Batch::default();
    b.put("v1/key/a", b"1");
    b.put("v1/key/b", b"");
    b.delete("v1/key/c");
    let bytes = packed(&b);
    let (puts, deletes) = Batch::unpack(&bytes).unwrap();
    assert_eq!(puts, vec![("v1/key/a", &b"1"[..]), ("v1/key/b", &b""[..])]);
    assert_eq!(deletes, vec!["v1/key/c"]);
    assert_eq!(
        Batch::unpack(&packed(&Batch::default())),
        Some((vec![], vec![]))
    );
}

#[test]
fn what_is_not_one_whole_batch_is_refused() {
    let mut b = Batch::default();
    b.put("v1/key/a", b"1");
    b.delete("v1/key/c");
    let bytes = packed(&b);
    for cut in 0..bytes.len() {
        assert_eq!(Batch::unpack(&bytes[..cut]), None, "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(Batch::unpack(&longer), None);
    // A count past what the bytes hold.
    let mut counted = bytes.clone();
    counted[0] = 0xff;
    assert_eq!(Batch::unpack(&counted), None);
    // A name that is not UTF-8 (no batch writes one).
    let at = bytes.windows(8).position(|w| w == b"v1/key/a").unwrap();
    let mut bad = bytes.clone();
    bad[at] = 0xff;
    assert_eq!(Batch::unpack(&bad), None);

    let mut r = Restore::default();
    assert_eq!(r.journal(&longer).unwrap_err().code(), "InvalidArgument");
}

#[test]
fn the_journal_comes_before_the_entries() {
    let mut r = Restore::default();
    r.add("v1/revision", b"1").unwrap();
    let err = r.journal(&packed(&Batch::default())).unwrap_err();
    assert_eq!(err.code(), "InvalidArgument");
}

/// A later batch wins over an earlier one and over the entries, for puts
/// and deletes alike, however many batches name the record.
#[test]
fn the_last_batch_naming_a_record_gives_its_state() {
    let mut l = Lessor::new(Config::default()).unwrap();
    for k in ["a", "b", "c", "d"] {
        l.put(T0, k.as_bytes(), b"old", PutOptions::default())
            .unwrap();
    }
    let entries = l.snapshot(T0);
    let record = |k: &str| {
        entries
            .iter()
            .find(|(name, _)| name.ends_with(&format!("/{k}")) && name.starts_with("v1/key/"))
            .unwrap()
            .clone()
    };
    let mut later = Lessor::new(Config::default()).unwrap();
    later.put(T0, b"x", b"new", PutOptions::default()).unwrap();
    let new_value = later
        .snapshot(T0)
        .into_iter()
        .find(|(n, _)| n == "v1/key/x")
        .unwrap()
        .1;
    let batch = |puts: &[(&str, &[u8])], deletes: &[&str]| {
        let mut b = Batch::default();
        puts.iter().for_each(|(k, v)| b.put(k, v));
        deletes.iter().for_each(|k| b.delete(k));
        packed(&b)
    };
    let (a, b, c) = (record("a").0, record("b").0, record("c").0);
    let journal = [
        batch(&[], &[&a]),               // a deleted
        batch(&[(&b, &new_value)], &[]), // b replaced
        batch(&[(&c, &new_value)], &[]), // c replaced, then deleted
        batch(&[], &[&c]),
        batch(&[], &[&b]), // b deleted, then put again
        batch(&[(&b, &record("b").1)], &[]),
    ];
    let mut r = Restore::default();
    for j in &journal {
        r.journal(j).unwrap();
    }
    for (k, v) in &entries {
        r.add(k, v).unwrap();
    }
    let mut back = r.finish(Config::default(), T0, None).unwrap();
    let get = |l: &mut Lessor, k: &[u8]| l.get(T0, k).map(|e| e.value.to_vec());
    assert_eq!(get(&mut back, b"a"), None);
    assert_eq!(get(&mut back, b"b"), Some(b"old".to_vec()));
    assert_eq!(get(&mut back, b"c"), None);
    assert_eq!(get(&mut back, b"d"), Some(b"old".to_vec()));
}
