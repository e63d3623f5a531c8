//! Restore of 100k leases with a key each, natively: the stored entries a
//! lessor's snapshot gives, read back by `Restore` (median of 9 runs, with
//! the decode of every entry and the rebuild from them timed apart).
//!
//! `cargo bench -p edge-lease-core --bench restore [-- <n>]` prints one JSON line.

use std::time::Instant;

use edge_lease_core::{Config, Lessor, PutOptions, Restore};

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let now = 1_700_000_000_000;
    let mut l = Lessor::new(Config::default()).unwrap();
    for i in 0..n {
        let id = l.grant(now, 600, 0).unwrap().id;
        let opts = PutOptions {
            lease: id,
            text: true,
            ..Default::default()
        };
        l.put(now, format!("svc/{i}").as_bytes(), b"up", opts)
            .unwrap();
    }
    let entries = l.snapshot(now);
    drop(l);
    let (mut decode, mut build, mut total) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..9 {
        let t0 = Instant::now();
        let mut r = Restore::default();
        for (k, v) in &entries {
            r.add(k, v).unwrap();
        }
        let t1 = Instant::now();
        let back = r.finish(Config::default(), now + 1000, None).unwrap();
        let t2 = Instant::now();
        assert_eq!(back.lease_count(), n, "restore lost leases");
        drop(back);
        decode.push((t1 - t0).as_secs_f64() * 1e3);
        build.push((t2 - t1).as_secs_f64() * 1e3);
        total.push((t2 - t0).as_secs_f64() * 1e3);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{{\"n\":{n},\"entries\":{},\"restoreMs\":{:.1},\"decodeMs\":{:.1},\"buildMs\":{:.1}}}",
        entries.len(),
        median(&mut total),
        median(&mut decode),
        median(&mut build)
    );
}
