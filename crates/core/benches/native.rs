//! Native side of the "churn" benchmark (`npm run bench` drives it).
//!
//! Usage: `native <system> <n>` runs one (system, N) pair and prints one JSON
//! line; `native list` prints the system names. Systems:
//!   - `naive-native`: a straightforward Rust lessor (std HashMap + BinaryHeap,
//!     lazy deletion as etcd's LeaseQueue), the native reference peer.
//!   - `edge-lease-core`: the edge-lease Rust core through its public API.
//!
//! The workload mirrors benches/workload.mjs exactly (same clock rule, same
//! keys, same value, same steps, same repetition counts) so that native and JS
//! figures can share one table.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hint::black_box;
use std::io::Write;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

// ---------------------------------------------------------------------------
// Counting allocator: bytes/lease = live heap bytes after step 1 minus before
// creating the system, divided by N. Requested sizes are counted (not the
// allocator's rounded size classes), like the JS side counts V8 heap objects.
// ---------------------------------------------------------------------------

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// The bench is single-threaded, so a plain load + store is exact and keeps a
// locked read-modify-write instruction out of every allocation being timed.
fn add_live(delta: isize) {
    let v = LIVE_BYTES.load(Ordering::Relaxed);
    LIVE_BYTES.store(v + delta, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            add_live(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            add_live(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        add_live(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            add_live(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// Workload parameters: keep in sync with benches/workload.mjs.
// ---------------------------------------------------------------------------

const TTL_S: i64 = 10;
/// The injected clock starts here (ms) rather than at 0 so nothing can rely on
/// a zero epoch.
const START_MS: u64 = 1_000_000;
/// The clock advances 1 ms every this many operations (a server doing ~1M
/// lease operations per second). Deterministic, and it keeps every renew
/// round well inside the 10 s TTL even at 1M leases.
const OPS_PER_MS: usize = 1000;
/// Same 8-byte value for every key: bytes/lease measures lease and key
/// bookkeeping, not payloads.
const VALUE: &[u8] = b"10.0.0.1";
const RENEW_ROUNDS: usize = 3;

/// Timed repetitions per N (median reported): small N runs are too short to
/// time once.
fn reps_for(n: usize) -> usize {
    match n {
        0..=1_000 => 15,
        1_001..=10_000 => 7,
        10_001..=100_000 => 3,
        _ => 1,
    }
}

/// What the workload needs from a lessor. `grant` returns the lease id the
/// harness later renews; `get` returns the value if the key is live.
trait Lessor {
    fn grant(&mut self, now_ms: u64, ttl_s: i64) -> i64;
    fn put(&mut self, now_ms: u64, key: &[u8], value: &[u8], lease: i64);
    fn renew(&mut self, now_ms: u64, id: i64);
    fn get(&mut self, now_ms: u64, key: &[u8]) -> Option<&[u8]>;
    /// Expires what is due and returns how many leases it expired.
    fn tick(&mut self, now_ms: u64) -> usize;
    /// Live leases.
    fn count(&self) -> usize;
}

// ---------------------------------------------------------------------------
// The naive native lessor: what a Rust user would write first. std defaults
// on purpose (SipHash, owned Vec<u8> keys, a HashSet per lease).
// ---------------------------------------------------------------------------

struct NaiveLease {
    ttl_s: i64,
    expiry_ms: u64,
    keys: HashSet<Vec<u8>>,
}

struct NaiveEntry {
    value: Vec<u8>,
    lease: i64,
}

/// Handed back by `tick` like the edge-lease core does, so both pay for
/// reporting what expired.
struct Expired {
    #[allow(dead_code)]
    id: i64,
    #[allow(dead_code)]
    keys: Vec<Vec<u8>>,
}

#[derive(Default)]
struct NaiveLessor {
    next_id: i64,
    leases: HashMap<i64, NaiveLease>,
    keys: HashMap<Vec<u8>, NaiveEntry>,
    /// Min-heap of (expiry, id). Renew pushes a fresh entry instead of
    /// updating in place; stale entries are skipped when popped (etcd's
    /// LeaseQueue does the same).
    queue: BinaryHeap<Reverse<(u64, i64)>>,
}

impl NaiveLessor {
    fn expire(&mut self, now_ms: u64) -> Vec<Expired> {
        let mut out = Vec::new();
        while let Some(&Reverse((expiry, id))) = self.queue.peek() {
            if expiry > now_ms {
                break;
            }
            self.queue.pop();
            // Stale entry: the lease was renewed (later expiry) or is gone.
            match self.leases.get(&id) {
                Some(l) if l.expiry_ms == expiry => {}
                _ => continue,
            }
            let lease = self.leases.remove(&id).expect("checked above");
            for k in &lease.keys {
                self.keys.remove(k);
            }
            out.push(Expired {
                id,
                keys: lease.keys.into_iter().collect(),
            });
        }
        out
    }
}

impl Lessor for NaiveLessor {
    fn grant(&mut self, now_ms: u64, ttl_s: i64) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let expiry_ms = now_ms + ttl_s as u64 * 1000;
        self.leases.insert(
            id,
            NaiveLease {
                ttl_s,
                expiry_ms,
                keys: HashSet::new(),
            },
        );
        self.queue.push(Reverse((expiry_ms, id)));
        id
    }

    fn put(&mut self, now_ms: u64, key: &[u8], value: &[u8], lease: i64) {
        match self.leases.get(&lease) {
            Some(l) if l.expiry_ms > now_ms => {}
            _ => panic!("put: lease {lease} not found or expired"),
        }
        let old = self.keys.insert(
            key.to_vec(),
            NaiveEntry {
                value: value.to_vec(),
                lease,
            },
        );
        // Re-attaching a key moves it off its previous lease.
        if let Some(old) = old {
            if old.lease != lease {
                if let Some(l) = self.leases.get_mut(&old.lease) {
                    l.keys.remove(key);
                }
            }
        }
        self.leases
            .get_mut(&lease)
            .unwrap()
            .keys
            .insert(key.to_vec());
    }

    fn renew(&mut self, now_ms: u64, id: i64) {
        let lease = match self.leases.get_mut(&id) {
            Some(l) if l.expiry_ms > now_ms => l,
            _ => panic!("renew: lease {id} not found or expired"),
        };
        lease.expiry_ms = now_ms + lease.ttl_s as u64 * 1000;
        self.queue.push(Reverse((lease.expiry_ms, id)));
    }

    fn get(&mut self, now_ms: u64, key: &[u8]) -> Option<&[u8]> {
        let entry = self.keys.get(key)?;
        // A key whose lease is past its deadline is already dead, even if
        // no tick has run yet.
        match self.leases.get(&entry.lease) {
            Some(l) if l.expiry_ms > now_ms => Some(&entry.value),
            _ => None,
        }
    }

    fn tick(&mut self, now_ms: u64) -> usize {
        let expired = self.expire(now_ms);
        let n = expired.len();
        black_box(expired);
        n
    }

    fn count(&self) -> usize {
        self.leases.len()
    }
}

// ---------------------------------------------------------------------------
// The edge-lease core (system "edge-lease-core"), through its public Rust API.
// ---------------------------------------------------------------------------

struct CoreAdapter(edge_lease_core::Lessor);

impl Lessor for CoreAdapter {
    fn grant(&mut self, now_ms: u64, ttl_s: i64) -> i64 {
        self.0.grant(now_ms as i64, ttl_s, 0).unwrap().id
    }
    fn put(&mut self, now_ms: u64, key: &[u8], value: &[u8], lease: i64) {
        let opts = edge_lease_core::PutOptions {
            lease,
            ..Default::default()
        };
        self.0.put(now_ms as i64, key, value, opts).unwrap();
    }
    fn renew(&mut self, now_ms: u64, id: i64) {
        self.0.renew(now_ms as i64, id).unwrap();
    }
    fn get(&mut self, now_ms: u64, key: &[u8]) -> Option<&[u8]> {
        self.0.get(now_ms as i64, key).map(|e| &e.value[..])
    }
    fn tick(&mut self, now_ms: u64) -> usize {
        self.0.tick(now_ms as i64).expired.len()
    }
    fn count(&self) -> usize {
        self.0.lease_count()
    }
}

const EDGE_LEASE_CORE_VERSION: &str = env!("CARGO_PKG_VERSION");

fn run_edge_lease_core(n: usize) -> Result {
    // The peers have no revoke-rate limit; lift it so step 4 measures the
    // cost of expiry, not the configured pace (1000/s would take N/1000 s).
    let config = edge_lease_core::Config {
        revoke_rate: u32::MAX,
        ..Default::default()
    };
    run(n, || {
        CoreAdapter(edge_lease_core::Lessor::new(config.clone()).unwrap())
    })
}

// ---------------------------------------------------------------------------
// The churn workload and its measurement.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Default)]
struct Steps {
    grant_put: f64,
    renew: f64,
    get: f64,
    expire: f64,
}

struct Result {
    reps: usize,
    steps: Steps,
    bytes_per_lease: f64,
}

/// Writes `svc/<i>` into `buf`, reusing its allocation (the JS side builds the
/// same string with `"svc/" + i`).
fn key_into(buf: &mut Vec<u8>, i: usize) {
    buf.truncate(4);
    write!(buf, "{i}").unwrap();
}

/// One full churn run on a fresh system: returns ns/op per step and the live
/// bytes added by step 1.
fn churn<L: Lessor>(n: usize, make: &impl Fn() -> L) -> (Steps, isize) {
    let mut key = Vec::with_capacity(32);
    key.extend_from_slice(b"svc/");
    let mut ids: Vec<i64> = Vec::with_capacity(n);
    let mut now = START_MS;
    let mut ops = 0usize;
    // Advance the injected clock by 1 ms every OPS_PER_MS operations.
    macro_rules! step_clock {
        () => {
            ops += 1;
            if ops % OPS_PER_MS == 0 {
                now += 1;
            }
        };
    }

    let live_before = live_bytes();
    let mut sys = make();

    // (1) grant + put with the lease
    let t = Instant::now();
    for i in 0..n {
        let id = sys.grant(now, TTL_S);
        key_into(&mut key, i);
        sys.put(now, &key, VALUE, id);
        ids.push(id);
        step_clock!();
    }
    let grant_put = t.elapsed().as_nanos() as f64 / n as f64;
    // `ids` was allocated up front, so only the system's growth is counted.
    let live_delta = live_bytes() - live_before;
    assert_eq!(sys.count(), n, "grant+put: live leases");

    // (2) renew every lease RENEW_ROUNDS times
    let t = Instant::now();
    for _ in 0..RENEW_ROUNDS {
        for &id in &ids {
            sys.renew(now, id);
            step_clock!();
        }
    }
    let renew = t.elapsed().as_nanos() as f64 / (n * RENEW_ROUNDS) as f64;

    // (3) get every key
    let mut hits = 0usize;
    let t = Instant::now();
    for i in 0..n {
        key_into(&mut key, i);
        if black_box(sys.get(now, &key)).is_some() {
            hits += 1;
        }
        step_clock!();
    }
    let get = t.elapsed().as_nanos() as f64 / n as f64;
    assert_eq!(hits, n, "get: every key should still be live");

    // (4) move the clock past every deadline, tick until all have expired
    now += TTL_S as u64 * 1000 + 1000;
    let t = Instant::now();
    let mut expired = 0usize;
    while sys.count() > 0 {
        let k = sys.tick(now);
        assert!(
            k > 0,
            "tick made no progress with {} leases left",
            sys.count()
        );
        expired += k;
    }
    let expire = t.elapsed().as_nanos() as f64 / n as f64;
    assert_eq!(expired, n, "expire: every lease once");
    key_into(&mut key, 0);
    assert!(sys.get(now, &key).is_none(), "expired key still readable");

    (
        Steps {
            grant_put,
            renew,
            get,
            expire,
        },
        live_delta,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn run<L: Lessor>(n: usize, make: impl Fn() -> L) -> Result {
    // Warm up caches, the allocator and page tables on a smaller run.
    churn(n.min(10_000), &make);
    let reps = reps_for(n);
    let mut all = Vec::with_capacity(reps);
    let mut bytes = 0isize;
    for r in 0..reps {
        let (s, live) = churn(n, &make);
        if r == 0 {
            bytes = live;
        }
        all.push(s);
    }
    let pick = |f: fn(&Steps) -> f64| median(all.iter().map(f).collect());
    Result {
        reps,
        steps: Steps {
            grant_put: pick(|s| s.grant_put),
            renew: pick(|s| s.renew),
            get: pick(|s| s.get),
            expire: pick(|s| s.expire),
        },
        bytes_per_lease: bytes as f64 / n as f64,
    }
}

fn json_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("list") {
        println!("naive-native\nedge-lease-core");
        return;
    }
    let (system, n) = match (
        args.first(),
        args.get(1).and_then(|s| s.parse::<usize>().ok()),
    ) {
        (Some(s), Some(n)) if n > 0 => (s.clone(), n),
        _ => {
            eprintln!("usage: native <naive-native|edge-lease-core> <n>  |  native list");
            std::process::exit(2);
        }
    };
    let (version, r) = match system.as_str() {
        "naive-native" => ("std", run(n, NaiveLessor::default)),
        "edge-lease-core" => (EDGE_LEASE_CORE_VERSION, run_edge_lease_core(n)),
        other => {
            eprintln!("unknown system {other}");
            std::process::exit(2);
        }
    };
    let head = format!(
        "{{\"system\":{},\"version\":{},\"n\":{n}",
        json_str(&system),
        json_str(version)
    );
    println!(
        "{head},\"reps\":{},\"steps\":{{\"grant_put\":{:.1},\"renew\":{:.1},\"get\":{:.1},\"expire\":{:.1}}},\"bytesPerLease\":{:.1},\"memorySource\":\"counting allocator (live bytes)\"}}",
        r.reps, r.steps.grant_put, r.steps.renew, r.steps.get, r.steps.expire, r.bytes_per_lease
    );
}
