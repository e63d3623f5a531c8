//! One sort for the whole core. Each instance of the standard library's
//! sorts (one per element type and comparison) is kilobytes of wasm, so
//! every sort of the core goes through this one: a merge sort of positions
//! with the comparison behind a `dyn`, the elements then moved into place.
//! Stable, and a pass over input that is already in order (stores list
//! their entries in key order, so a restore mostly sorts sorted data).
//!
//! Changes sorted by revision are the exception the merge sort is slow on:
//! a restore lists the live entries in hash order, and 100k keys put by
//! transactions of 128 within the history kept are 100k changes in random
//! order (a sixth of a Durable Object's wake-up). Their revisions span
//! about as many numbers as there are changes, so `sort_by_revision`
//! counts them into place and merge-sorts only within a revision.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably.
pub fn sort_by<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let mut order = sorted_positions(v.len(), &|a, b| cmp(&v[a], &v[b]) == Ordering::Greater);
    permute(v, &mut order);
}

/// Sorts `v` by `at` (a revision and a sub-revision), then by `cmp` among
/// equal ones, stably. A counting sort by revision when the revisions span
/// at most twice as many numbers as there are elements (plus a little),
/// each revision's then placed by sub-revision (or merge-sorted if those
/// repeat or leave gaps); the merge sort otherwise.
pub fn sort_by_revision<T>(
    v: &mut [T],
    at: impl Fn(&T) -> (i64, u32),
    cmp: impl Fn(&T, &T) -> Ordering,
) {
    if v.len() < 2 {
        return;
    }
    let ats: Vec<(i64, u32)> = v.iter().map(at).collect();
    let after = |a: usize, b: usize| {
        ats[a].cmp(&ats[b]).then_with(|| cmp(&v[a], &v[b])) == Ordering::Greater
    };
    let mut order =
        counted_positions(&ats, &after).unwrap_or_else(|| sorted_positions(v.len(), &after));
    permute(v, &mut order);
}

/// The positions of `ats` counted into the order of their revisions, then
/// sorted by `after` among equal revisions, stably; None if the revisions
/// span too many numbers for counting.
fn counted_positions(ats: &[(i64, u32)], after: &dyn Fn(usize, usize) -> bool) -> Option<Vec<u32>> {
    let n = ats.len();
    let lo = ats.iter().map(|a| a.0).min()?;
    let hi = ats.iter().map(|a| a.0).max()?;
    let span = hi as i128 - lo as i128 + 1;
    if span > 2 * n as i128 + 1024 {
        return None;
    }
    // starts[r]: where revision lo + r's positions begin.
    let mut starts = vec![0u32; span as usize + 1];
    for a in ats {
        starts[(a.0 - lo) as usize + 1] += 1;
    }
    for r in 1..starts.len() {
        starts[r] += starts[r - 1];
    }
    let mut order = vec![0u32; n];
    let mut next = starts.clone();
    for (i, a) in ats.iter().enumerate() {
        let slot = &mut next[(a.0 - lo) as usize];
        order[*slot as usize] = i as u32;
        *slot += 1;
    }
    let mut scratch = Vec::new();
    for w in starts.windows(2) {
        let run = &mut order[w[0] as usize..w[1] as usize];
        if run.len() > 1 && !placed_by_sub(run, ats, &mut scratch) {
            merge_sort(run, &mut scratch, after);
        }
    }
    Some(order)
}

/// Puts the positions of one revision in sub-revision order directly when
/// their sub-revisions are 0..k (a revision's changes, each once), and
/// says so; false (`run` unchanged) when they are not.
fn placed_by_sub(run: &mut [u32], ats: &[(i64, u32)], scratch: &mut Vec<u32>) -> bool {
    scratch.clear();
    scratch.resize(run.len(), u32::MAX);
    for &p in run.iter() {
        match scratch.get_mut(ats[p as usize].1 as usize) {
            Some(slot) if *slot == u32::MAX => *slot = p,
            _ => return false,
        }
    }
    run.copy_from_slice(scratch);
    true
}

/// The positions 0..n in the order `after` sorts them (`after(a, b)`: a
/// goes after b), stably.
fn sorted_positions(n: usize, after: &dyn Fn(usize, usize) -> bool) -> Vec<u32> {
    let mut a: Vec<u32> = (0..n as u32).collect();
    merge_sort(&mut a, &mut Vec::new(), after);
    a
}

/// Sorts the positions in `a` by `after`, stably: bottom-up merges of runs
/// twice as long each pass, a merge skipped when its two runs are already
/// in order. `scratch` is working space (any contents).
fn merge_sort(a: &mut [u32], scratch: &mut Vec<u32>, after: &dyn Fn(usize, usize) -> bool) {
    let n = a.len();
    scratch.clear();
    scratch.extend_from_slice(a);
    let (mut a, mut b) = (a, &mut scratch[..]);
    let mut in_scratch = false;
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            if mid == hi || !after(a[mid - 1] as usize, a[mid] as usize) {
                b[lo..hi].copy_from_slice(&a[lo..hi]);
            } else {
                let (mut i, mut j) = (lo, mid);
                for slot in &mut b[lo..hi] {
                    // Take from the right run only when the left one's
                    // next goes after it: equal elements keep their order.
                    let right = i == mid || (j < hi && after(a[i] as usize, a[j] as usize));
                    if right {
                        *slot = a[j];
                        j += 1;
                    } else {
                        *slot = a[i];
                        i += 1;
                    }
                }
            }
            lo = hi;
        }
        std::mem::swap(&mut a, &mut b);
        in_scratch = !in_scratch;
        width *= 2;
    }
    // The sorted positions are in `a`: the caller's slice if the passes
    // were even, else the scratch, copied back.
    if in_scratch {
        b.copy_from_slice(a);
    }
}

/// Moves `v[order[k]]` to `k` for every k, following the permutation's
/// cycles with swaps (`order` is used up).
fn permute<T>(v: &mut [T], order: &mut [u32]) {
    for start in 0..v.len() {
        let mut at = start;
        loop {
            let from = order[at] as usize;
            order[at] = at as u32;
            if from == start || from == at {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_by, sort_by_revision};

    /// A small deterministic generator (a 64-bit LCG's high bits).
    fn lcg(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        }
    }

    #[test]
    fn sorts_stably_like_the_standard_sort() {
        let mut rand = lcg(7);
        for n in [0usize, 1, 2, 3, 5, 8, 31, 64, 100, 1000] {
            for spread in [1u64, 3, 50, 1 << 40] {
                let mut v: Vec<(u64, usize)> = (0..n).map(|i| (rand() % spread, i)).collect();
                let mut want = v.clone();
                want.sort_by_key(|&(k, _)| k);
                sort_by(&mut v, |a, b| a.0.cmp(&b.0));
                assert_eq!(v, want, "n={n} spread={spread}");
                // Already sorted, and reversed.
                sort_by(&mut v, |a, b| a.0.cmp(&b.0));
                assert_eq!(v, want);
                v.reverse();
                want.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
                sort_by(&mut v, |a, b| b.0.cmp(&a.0));
                let keys = |v: &[(u64, usize)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
                assert_eq!(keys(&v), keys(&want));
            }
        }
    }

    #[test]
    fn sorts_by_revision_like_the_standard_sort() {
        let mut rand = lcg(11);
        // Spans of revisions narrower than the elements (counted), about
        // as wide, and far wider (merge-sorted whole); negative ones and
        // the ends of i64 too.
        for n in [0usize, 1, 2, 3, 7, 100, 1000, 5000] {
            for (base, spread) in [
                (0i64, 1u64),
                (-1, 3),
                (1000, n as u64 / 128 + 1),
                (5, 2 * n as u64 + 1),
                (-40, 1 << 40),
                (i64::MIN, 1 << 62),
                (i64::MAX - 10, 10),
            ] {
                let mut v: Vec<(i64, u64, usize)> = (0..n)
                    .map(|i| (base.wrapping_add((rand() % spread) as i64), rand() % 4, i))
                    .collect();
                let mut want = v.clone();
                want.sort_by_key(|&(r, s, _)| (r, s / 2, s));
                sort_by_revision(&mut v, |t| (t.0, (t.1 / 2) as u32), |a, b| a.1.cmp(&b.1));
                assert_eq!(v, want, "n={n} base={base} spread={spread}");
            }
        }
    }

    #[test]
    fn places_each_revisions_changes_by_sub_revision() {
        // Revisions whose changes have sub-revisions 0..k in a shuffled
        // order (placed directly), one with a sub-revision repeated and
        // one with a gap (merge-sorted), all mixed together.
        let mut rand = lcg(5);
        let mut v: Vec<(i64, u32, u64)> = Vec::new();
        for r in 0..200i64 {
            let k = 1 + (rand() % 130) as u32;
            for sub in 0..k {
                let sub = match r {
                    7 => sub / 2,
                    9 => sub * 2,
                    _ => sub,
                };
                v.push((100 + r, sub, rand()));
            }
        }
        let mut keyed: Vec<(u64, (i64, u32, u64))> = v.iter().map(|&t| (rand(), t)).collect();
        keyed.sort_by_key(|&(k, _)| k);
        let mut v: Vec<_> = keyed.into_iter().map(|(_, t)| t).collect();
        let mut want = v.clone();
        want.sort_by_key(|&(r, s, x)| (r, s, x));
        sort_by_revision(&mut v, |t| (t.0, t.1), |a, b| a.2.cmp(&b.2));
        assert_eq!(v, want);
    }
}
