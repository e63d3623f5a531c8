//! One sort for the whole core. Each instance of the standard library's
//! sorts (one per element type and comparison) is kilobytes of wasm, so
//! every sort of the core goes through this one: a merge sort of positions
//! with the comparison behind a `dyn`, the elements then moved into place.
//! Stable, and a pass over input that is already in order (stores list
//! their entries in key order, so a restore mostly sorts sorted data).

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, stably.
pub fn sort_by<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let mut order = sorted_positions(v.len(), &|a, b| cmp(&v[a], &v[b]) == Ordering::Greater);
    permute(v, &mut order);
}

/// The positions 0..n in the order `after` sorts them (`after(a, b)`: a
/// goes after b), stably: bottom-up merges of runs twice as long each
/// pass, a merge skipped when its two runs are already in order.
fn sorted_positions(n: usize, after: &dyn Fn(usize, usize) -> bool) -> Vec<u32> {
    let mut a: Vec<u32> = (0..n as u32).collect();
    let mut b = a.clone();
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
        width *= 2;
    }
    a
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
    use super::sort_by;

    #[test]
    fn sorts_stably_like_the_standard_sort() {
        let mut seed = 7u64;
        for n in [0usize, 1, 2, 3, 5, 8, 31, 64, 100, 1000] {
            for spread in [1u64, 3, 50, 1 << 40] {
                let mut v: Vec<(u64, usize)> = (0..n)
                    .map(|i| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((seed >> 33) % spread, i)
                    })
                    .collect();
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
}
