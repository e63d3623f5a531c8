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
    assert_eq!(
        snap.keys,
        vec![(key.as_slice().into(), e), (b"later"[..].into(), later)]
    );
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

/// The field reader takes what the encoder writes and the forms earlier
/// readers took (a '+', leading zeros, 19 digits), and refuses the rest.
#[test]
fn records_are_read_field_by_field_as_before() {
    let ok: &[(&[u8], Header)] = &[
        (
            b"create=2 mod=9 version=3 lease=ffffffffffffffff text=0",
            (2, 9, 3, -1, false, 0),
        ),
        (
            b"create=2 mod=9 version=3 lease=000000000000000a text=1 sub=4",
            (2, 9, 3, 10, true, 4),
        ),
        (
            b"create=+2 mod=009 version=3 lease=0000000000000001 text=0",
            (2, 9, 3, 1, false, 0),
        ),
        (
            b"create=1234567890123456789 mod=9 version=1 lease=0000000000000001 text=0",
            (1234567890123456789, 9, 1, 1, false, 0),
        ),
        (
            b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=4294967295",
            (2, 9, 3, 1, false, u32::MAX),
        ),
    ];
    for (h, want) in ok {
        assert_eq!(
            header_fields("k", h).ok(),
            Some(*want),
            "{}",
            String::from_utf8_lossy(h)
        );
    }
    let bad: &[&[u8]] = &[
        b"create=2 mod=9 version=3 lease=000000000000000A text=0",
        b"create=2 mod=9 version=3 lease=00000000000000001 text=0",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=2",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=0",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=04",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=4294967296",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=-1",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=4 x=1",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 ",
        b"create=2  mod=9 version=3 lease=0000000000000001 text=0",
        b"mod=9 create=2 version=3 lease=0000000000000001 text=0",
        b"create=2 mod=9 version=3 lease=0000000000000001",
        b"create= mod=9 version=3 lease=0000000000000001 text=0",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0\xff",
        b"",
    ];
    for h in bad {
        match header_fields("k", h) {
            Err(Error::CorruptEntry { key, .. }) => assert_eq!(key, "k"),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(h)),
        }
    }
    let lease = |v: &[u8]| {
        lease_fields("k", v)
            .ok()
            .map(|l| (l.ttl, l.deadline, l.remaining))
    };
    assert_eq!(
        lease(b"ttl=10 deadline=1700000000000 remaining=0"),
        Some((10, Some(1_700_000_000_000), 0))
    );
    assert_eq!(
        lease(b"ttl=10 deadline=none remaining=500"),
        Some((10, None, 500))
    );
    for v in [
        &b"ttl=10 deadline=1 remaining=0 "[..],
        b"ttl=10 deadline=None remaining=0",
        b"ttl=10 remaining=0 deadline=1",
        b"ttl=10 deadline=1 remaining=",
        b"ttl=10 deadline=1",
        b"",
    ] {
        assert_eq!(lease(v), None, "{}", String::from_utf8_lossy(v));
    }
}
