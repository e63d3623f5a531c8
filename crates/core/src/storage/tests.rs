//! The stored layout written and read back.

use super::codec::*;
use super::decode::*;
use crate::error::Error;
use crate::types::Entry;

#[test]
fn entries_round_trip() {
    let e = Entry {
        value: b"a\nb\xff".to_vec().into(),
        text: false,
        create_revision: 2,
        mod_revision: 9,
        version: 3,
        sub: 0,
        lease: -1,
    };
    // A later change of its revision keeps its sub-revision too.
    let later = Entry {
        sub: 4,
        ..e.clone()
    };
    let kl = key_key(b"later");
    let l = StoredLease {
        ttl: 10,
        deadline: Some(1_700_000_000_000),
        remaining: 0,
    };
    let key = b"svc/a b%\x00".to_vec();
    let kk = key_key(&key);
    assert_eq!(kk, "v1/key/svc/a%20b%25%00");
    let snap = decode([
        (REVISION_KEY.to_string(), encode_revision(9)),
        (lease_key(-1), encode_lease(&l)),
        (kk, encode_entry(&e)),
        (kl, encode_entry(&later)),
    ])
    .unwrap();
    assert_eq!(snap.revision, 9);
    assert_eq!(snap.leases, vec![(-1, l)]);
    assert_eq!(snap.keys, vec![(key, e), (b"later".to_vec(), later)]);
    assert_eq!(lease_key(-1), "v1/lease/ffffffffffffffff");
}

#[test]
fn bad_entries_name_the_entry() {
    let cases: Vec<(&str, &[u8])> = vec![
        ("v1/lease/xyz", b"ttl=1 deadline=none remaining=0"),
        ("v1/lease/0000000000000001", b"ttl=1 deadline=none"),
        (
            "v1/lease/0000000000000001",
            b"ttl=0 deadline=none remaining=0",
        ),
        (
            "v1/key/a",
            b"create=2 mod=2 version=1 lease=0000000000000000 text=0",
        ),
        (
            "v1/key/a%Z1",
            b"create=2 mod=2 version=1 lease=0000000000000000 text=0\n",
        ),
        (
            "v1/key/a",
            b"create=2 mod=2 version=1 lease=0000000000000000 text=0 sub=0\n",
        ),
        (
            "v1/key/a",
            b"create=2 mod=2 version=1 lease=0000000000000000 text=0 sub=x\n",
        ),
        (
            "v1/key/a",
            b"create=2 mod=1 version=1 lease=0000000000000000 text=0\n",
        ),
        ("v1/revision", b"-4"),
        ("other", b""),
    ];
    for (k, v) in cases {
        match decode([(k, v)]) {
            Err(Error::CorruptEntry { key, .. }) => assert_eq!(key, k),
            other => panic!("{k}: expected CorruptEntry, got {other:?}"),
        }
    }
}
