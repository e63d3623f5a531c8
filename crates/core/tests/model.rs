//! Model-based test: random operation sequences against a small reference
//! model of etcd lease semantics, with the invariants of the core issue.

#![cfg(not(target_arch = "wasm32"))] // proptest is a native-only dev-dependency

use std::collections::{BTreeMap, BTreeSet};

use edge_lease_core::{Config, Error, Lessor, PutOptions};
use proptest::prelude::*;

const T0: i64 = 1_700_000_000_000;
const IDS: [i64; 4] = [1, 2, -1, i64::MAX];
const KEYS: [&str; 4] = ["a", "b", "lock/x", "lock/y"];

#[derive(Debug, Clone)]
enum Op {
    Grant {
        ttl: i64,
        id: usize,
        random: bool,
    },
    Renew(usize),
    Revoke(usize),
    Put {
        key: usize,
        lease: Option<usize>,
        if_absent: bool,
        value: u8,
    },
    Delete(usize),
    Get(usize),
    Tick,
    Promote(i64),
    Demote,
    Advance(i64),
    Back(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (-2i64..12, 0..IDS.len(), any::<bool>())
            .prop_map(|(ttl, id, random)| Op::Grant { ttl, id, random }),
        3 => (0..IDS.len()).prop_map(Op::Renew),
        1 => (0..IDS.len()).prop_map(Op::Revoke),
        4 => (0..KEYS.len(), proptest::option::of(0..IDS.len()), any::<bool>(), any::<u8>())
            .prop_map(|(key, lease, if_absent, value)| Op::Put { key, lease, if_absent, value }),
        1 => (0..KEYS.len()).prop_map(Op::Delete),
        2 => (0..KEYS.len()).prop_map(Op::Get),
        2 => Just(Op::Tick),
        1 => (0i64..3_000).prop_map(Op::Promote),
        1 => Just(Op::Demote),
        // Whole seconds land exactly on deadlines, where off-by-ones live.
        2 => (0i64..6_000).prop_map(Op::Advance),
        3 => (0i64..7).prop_map(|s| Op::Advance(s * 1000)),
        1 => (0i64..6_000).prop_map(Op::Back),
    ]
}

#[derive(Debug, Clone)]
struct MLease {
    ttl: i64,
    /// None on a standby.
    deadline: Option<i64>,
    remaining: i64,
}

#[derive(Debug, Clone, PartialEq)]
struct MKey {
    value: Vec<u8>,
    lease: i64,
    version: i64,
}

/// The reference: what every read must see.
struct Model {
    now: i64,
    primary: bool,
    leases: BTreeMap<i64, MLease>,
    keys: BTreeMap<Vec<u8>, MKey>,
    /// Leases removed outside tick, still to be reported by the next tick.
    pending: Vec<i64>,
}

impl Model {
    fn live(&self, id: i64) -> bool {
        self.leases
            .get(&id)
            .is_some_and(|l| l.deadline.is_none_or(|d| d > self.now))
    }

    fn key_live(&self, k: &MKey) -> bool {
        k.lease == 0 || self.live(k.lease)
    }

    fn visible(&self) -> BTreeMap<Vec<u8>, MKey> {
        self.keys
            .iter()
            .filter(|(_, k)| self.key_live(k))
            .map(|(n, k)| (n.clone(), k.clone()))
            .collect()
    }

    fn remove_lease(&mut self, id: i64) {
        self.leases.remove(&id);
        self.keys.retain(|_, k| k.lease != id);
    }
}

fn code(e: &Error) -> &'static str {
    e.code()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn lessor_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut l = Lessor::new(Config { revoke_rate: 1_000_000, ..Default::default() }).unwrap();
        let mut m = Model { now: i64::MIN, primary: true, leases: BTreeMap::new(), keys: BTreeMap::new(), pending: Vec::new() };
        let mut clock = T0;
        let mut last_rev = l.revision();
        // create revision of each live key, fixed until the key goes
        let mut created: BTreeMap<Vec<u8>, i64> = BTreeMap::new();

        for op in ops {
            match op {
                Op::Advance(ms) => clock += ms,
                Op::Back(ms) => clock -= ms,
                _ => {}
            }
            m.now = m.now.max(clock);
            let now = clock;
            match op {
                Op::Grant { ttl, id, random } => {
                    let want = if random { 0 } else { IDS[id] };
                    let r = l.grant(now, ttl, want);
                    if !random && m.live(want) {
                        prop_assert_eq!(r.map_err(|e| code(&e)), Err("LeaseExists"));
                    } else {
                        let g = r.unwrap();
                        prop_assert_eq!(g.ttl, ttl.max(1));
                        if random {
                            prop_assert!(g.id > 0 && !m.leases.contains_key(&g.id));
                        } else {
                            prop_assert_eq!(g.id, want);
                            if m.leases.contains_key(&want) {
                                // expired, not yet cleaned: finished now
                                for (k, _) in m.keys.iter().filter(|(_, k)| k.lease == want) {
                                    created.remove(k);
                                }
                                m.remove_lease(want);
                                m.pending.push(want);
                            }
                        }
                        let deadline = m.primary.then_some(m.now + g.ttl * 1000);
                        m.leases.insert(g.id, MLease { ttl: g.ttl, deadline, remaining: 0 });
                    }
                }
                Op::Renew(i) => {
                    let id = IDS[i];
                    let r = l.renew(now, id);
                    if !m.primary {
                        prop_assert_eq!(r.map_err(|e| code(&e)), Err("NotPrimary"));
                    } else if !m.live(id) {
                        prop_assert_eq!(r.map_err(|e| code(&e)), Err("LeaseNotFound"));
                    } else {
                        let lease = m.leases.get_mut(&id).unwrap();
                        prop_assert_eq!(r, Ok(lease.ttl));
                        lease.deadline = Some(m.now + lease.ttl * 1000);
                        lease.remaining = 0;
                    }
                }
                Op::Revoke(i) => {
                    let id = IDS[i];
                    let r = l.revoke(now, id);
                    if !m.live(id) {
                        prop_assert_eq!(r.map_err(|e| code(&e)), Err("LeaseNotFound"));
                    } else {
                        let r = r.unwrap();
                        let want: Vec<Vec<u8>> = m.keys.iter().filter(|(_, k)| k.lease == id).map(|(n, _)| n.clone()).collect();
                        let got: Vec<Vec<u8>> = r.keys.iter().map(|k| k.to_vec()).collect();
                        prop_assert_eq!(&got, &want, "revoke removes every attached key, sorted");
                        for k in &got { created.remove(k); }
                        m.remove_lease(id);
                    }
                }
                Op::Put { key, lease, if_absent, value } => {
                    let name = KEYS[key].as_bytes().to_vec();
                    let lease_id = lease.map_or(0, |i| IDS[i]);
                    let opts = PutOptions { lease: lease_id, if_absent, text: false, ..Default::default() };
                    let r = l.put(now, &name, &[value], opts);
                    let existing = m.keys.get(&name).filter(|k| m.key_live(k)).cloned();
                    if lease_id != 0 && !m.live(lease_id) {
                        prop_assert_eq!(r.map_err(|e| code(&e)), Err("LeaseNotFound"));
                    } else if if_absent && existing.is_some() {
                        let r = r.unwrap();
                        prop_assert!(!r.created);
                        prop_assert_eq!(r.revision, last_rev);
                    } else {
                        let r = r.unwrap();
                        prop_assert_eq!(r.created, existing.is_none());
                        let version = existing.map_or(1, |k| k.version + 1);
                        if r.created {
                            created.insert(name.clone(), r.revision);
                        }
                        m.keys.insert(name, MKey { value: vec![value], lease: lease_id, version });
                    }
                }
                Op::Delete(key) => {
                    let name = KEYS[key].as_bytes().to_vec();
                    let r = l.delete(now, &name, false).unwrap();
                    let live = m.keys.get(&name).is_some_and(|k| m.key_live(k));
                    prop_assert_eq!(r.deleted, live);
                    if live {
                        m.keys.remove(&name);
                        created.remove(&name);
                    }
                }
                Op::Get(key) => {
                    let name = KEYS[key].as_bytes();
                    let got = l.get(now, name).map(|e| (e.value.to_vec(), e.lease, e.version));
                    let want = m.keys.get(name).filter(|k| m.key_live(k)).map(|k| (k.value.clone(), k.lease, k.version));
                    prop_assert_eq!(got, want);
                }
                Op::Tick => {
                    let t = l.tick(now);
                    prop_assert!(t.error.is_none());
                    let mut got: Vec<i64> = t.expired.iter().map(|r| r.id).collect();
                    let mut pending = std::mem::take(&mut m.pending);
                    let mut want: Vec<i64> = pending.to_vec();
                    if m.primary {
                        for (&id, lease) in &m.leases {
                            if lease.deadline.is_some_and(|d| d <= m.now) {
                                want.push(id);
                            }
                        }
                    }
                    got.sort_unstable();
                    want.sort_unstable();
                    prop_assert_eq!(&got, &want, "tick expires exactly what is due");
                    for r in &t.expired {
                        if let Some(at) = pending.iter().position(|&p| p == r.id) {
                            pending.swap_remove(at);
                            continue; // already gone from the model at its grant
                        }
                        let attached: Vec<Vec<u8>> = m.keys.iter().filter(|(_, k)| k.lease == r.id).map(|(n, _)| n.clone()).collect();
                        let got_keys: Vec<Vec<u8>> = r.keys.iter().map(|k| k.to_vec()).collect();
                        prop_assert_eq!(got_keys, attached, "expiry removes every attached key");
                        for k in r.keys.iter() { created.remove(&k.to_vec()); }
                        m.remove_lease(r.id);
                    }
                }
                Op::Promote(extend) => {
                    l.promote(now, extend).unwrap();
                    m.primary = true;
                    let now = m.now;
                    for lease in m.leases.values_mut() {
                        let live = lease.deadline.is_none_or(|d| d > now);
                        if live {
                            let rem = if lease.remaining > 0 { lease.remaining } else { lease.ttl * 1000 };
                            lease.deadline = Some(now + extend + rem);
                        }
                    }
                }
                Op::Demote => {
                    l.demote(now);
                    if m.primary {
                        let now = m.now;
                        for lease in m.leases.values_mut() {
                            if let Some(d) = lease.deadline {
                                if d > now {
                                    lease.remaining = d - now;
                                    lease.deadline = None;
                                }
                            }
                        }
                    }
                    m.primary = false;
                }
                Op::Advance(_) | Op::Back(_) => {}
            }

            // Invariants, through the public API only.
            let rev = l.revision();
            prop_assert!(rev >= last_rev, "revisions never go back");
            last_rev = rev;
            let visible: Vec<(Vec<u8>, i64, i64, i64)> = l.range(now, b"").into_iter()
                .map(|(k, e)| (k.to_vec(), e.lease, e.create_revision, e.mod_revision)).collect();
            let want = m.visible();
            prop_assert_eq!(visible.len(), want.len(), "visible keys match the model");
            let live_leases: BTreeSet<i64> = l.leases(now).into_iter().collect();
            let want_leases: BTreeSet<i64> = m.leases.keys().copied().filter(|&id| m.live(id)).collect();
            prop_assert_eq!(&live_leases, &want_leases, "no lease gone early, none visible late");
            let mut owner: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
            for &id in &live_leases {
                let t = l.time_to_live(now, id, true).unwrap();
                prop_assert!(t.ttl_ms > 0);
                if let Some(d) = m.leases[&id].deadline {
                    prop_assert_eq!(t.ttl_ms, d - m.now);
                }
                for k in t.keys.iter() {
                    prop_assert!(owner.insert(k.to_vec(), id).is_none(), "a key belongs to at most one lease");
                }
            }
            for (k, lease, create, modrev) in visible {
                let mk = &want[&k];
                prop_assert_eq!(lease, mk.lease);
                prop_assert!(create <= modrev && modrev <= rev);
                prop_assert_eq!(Some(&create), created.get(&k), "create revision fixed until deleted");
                if lease != 0 {
                    prop_assert_eq!(owner.get(&k), Some(&lease));
                }
            }
        }
    }
}
