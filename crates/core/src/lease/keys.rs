//! The keys attached to a lease, sorted. Most leases hold one (a session's,
//! a lock's, a service's): it sits in the lease's record, in the space a
//! `Vec`'s header takes, with no allocation of its own; a second key moves
//! them to a `Vec`.

use std::ops::Deref;

use crate::types::Key;

#[derive(Debug)]
pub enum LeaseKeys {
    One(Key),
    Many(Vec<Key>),
}

impl Default for LeaseKeys {
    fn default() -> LeaseKeys {
        LeaseKeys::Many(Vec::new())
    }
}

impl Deref for LeaseKeys {
    type Target = [Key];

    fn deref(&self) -> &[Key] {
        match self {
            LeaseKeys::One(k) => std::slice::from_ref(k),
            LeaseKeys::Many(v) => v,
        }
    }
}

impl LeaseKeys {
    /// Adds `key` in its place, unless it is there.
    pub fn insert(&mut self, key: &Key) {
        let Err(at) = self.binary_search(key) else {
            return;
        };
        match self {
            LeaseKeys::Many(v) if v.is_empty() => *self = LeaseKeys::One(key.clone()),
            LeaseKeys::One(k) => {
                let mut v = vec![k.clone(), key.clone()];
                if at == 0 {
                    v.swap(0, 1);
                }
                *self = LeaseKeys::Many(v);
            }
            LeaseKeys::Many(v) => {
                // Leases past one key mostly hold a few: grow by one at
                // first instead of Vec's default of four.
                if v.len() < 4 {
                    v.reserve_exact(1);
                }
                v.insert(at, key.clone());
            }
        }
    }

    /// Keeps the keys `keep` says to keep.
    pub fn retain(&mut self, mut keep: impl FnMut(&Key) -> bool) {
        match self {
            LeaseKeys::One(k) if !keep(k) => *self = LeaseKeys::default(),
            LeaseKeys::One(_) => {}
            LeaseKeys::Many(v) => v.retain(|k| keep(k)),
        }
    }

    /// Takes `key` out, if it is there.
    pub fn remove(&mut self, key: &Key) {
        match self {
            LeaseKeys::One(k) if k == key => *self = LeaseKeys::default(),
            LeaseKeys::One(_) => {}
            LeaseKeys::Many(v) => {
                if let Ok(at) = v.binary_search(key) {
                    v.remove(at);
                }
            }
        }
    }

    pub fn into_vec(self) -> Vec<Key> {
        match self {
            LeaseKeys::One(k) => vec![k],
            LeaseKeys::Many(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Key {
        s.as_bytes().into()
    }

    fn names(k: &LeaseKeys) -> Vec<&[u8]> {
        k.iter().map(|k| &k[..]).collect()
    }

    #[test]
    fn the_space_of_a_vec() {
        assert_eq!(
            std::mem::size_of::<LeaseKeys>(),
            std::mem::size_of::<Vec<Key>>()
        );
    }

    #[test]
    fn sorted_and_each_once_from_none_to_many_and_back() {
        let mut k = LeaseKeys::default();
        assert!(k.is_empty());
        k.insert(&key("m"));
        k.insert(&key("m"));
        assert!(matches!(k, LeaseKeys::One(_)));
        k.insert(&key("a"));
        assert_eq!(names(&k), [b"a", b"m"]);
        k.insert(&key("z"));
        k.insert(&key("c"));
        k.insert(&key("a"));
        assert_eq!(names(&k), [&b"a"[..], b"c", b"m", b"z"]);
        k.remove(&key("c"));
        k.remove(&key("q"));
        assert_eq!(names(&k), [b"a", b"m", b"z"]);
        k.retain(|x| &x[..] != b"a");
        assert_eq!(names(&k), [b"m", b"z"]);
        assert_eq!(k.into_vec(), vec![key("m"), key("z")]);

        let mut one = LeaseKeys::default();
        one.insert(&key("z"));
        one.insert(&key("b"));
        assert_eq!(names(&one), [b"b", b"z"]);
        let mut one = LeaseKeys::default();
        one.insert(&key("b"));
        one.remove(&key("x"));
        assert_eq!(names(&one), [b"b"]);
        one.remove(&key("b"));
        assert!(one.is_empty());
        one.insert(&key("b"));
        one.retain(|_| true);
        assert_eq!(names(&one), [b"b"]);
        one.retain(|_| false);
        assert!(one.is_empty());
        assert!(one.into_vec().is_empty());
    }
}
