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

/// The byte-by-byte reader of the encoder's form (`header_fast`,
/// `lease_fast`) reads what the field-by-field reader reads, and leaves
/// everything else to it (None), so that it names the fault.
#[test]
fn fast_readers_agree_with_the_field_readers() {
    let headers: &[&[u8]] = &[
        b"create=2 mod=9 version=3 lease=ffffffffffffffff text=0",
        b"create=2 mod=9 version=3 lease=000000000000000a text=1 sub=4",
        b"create=-2 mod=-0 version=007 lease=0123456789abcdef text=1",
        b"create=123456789012345678 mod=9 version=1 lease=0000000000000001 text=0",
        // Not the encoder's form: the field readers decide.
        b"create=1234567890123456789 mod=9 version=1 lease=0000000000000001 text=0",
        b"create=+2 mod=9 version=3 lease=0000000000000001 text=0",
        b"create=2 mod=9 version=3 lease=000000000000000A text=0",
        b"create=2 mod=9 version=3 lease=00000000000000001 text=0",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=2",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=0",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=04",
        b"create=2 mod=9 version=3 lease=0000000000000001 text=0 sub=4294967295",
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
    for h in headers {
        let slow = header_fields("k", h).ok();
        if let Some(fast) = header_fast(h) {
            assert_eq!(Some(fast), slow, "{}", String::from_utf8_lossy(h));
        }
    }
    let leases: &[&[u8]] = &[
        b"ttl=10 deadline=1700000000000 remaining=0",
        b"ttl=10 deadline=none remaining=500",
        b"ttl=-1 deadline=-5 remaining=-0",
        b"ttl=10 deadline=1700000000000 remaining=0 ",
        b"ttl=10 deadline=None remaining=0",
        b"ttl=10 remaining=0 deadline=1",
        b"ttl=+10 deadline=1 remaining=0",
        b"ttl=1234567890123456789 deadline=1 remaining=0",
        b"ttl=10 deadline=1 remaining=",
        b"",
    ];
    for v in leases {
        let slow = lease_fields("k", v)
            .ok()
            .map(|l| (l.ttl, l.deadline, l.remaining));
        if let Some(fast) = lease_fast(v) {
            assert_eq!(Some(fast), slow, "{}", String::from_utf8_lossy(v));
        }
    }
    // The encoder's own output always takes the fast way.
    let l = StoredLease {
        ttl: 600,
        deadline: Some(1_700_000_000_000),
        remaining: 12,
    };
    assert_eq!(lease_fast(&encode_lease(&l)), Some((600, l.deadline, 12)));
    let e = Entry {
        value: b"v".to_vec().into(),
        text: true,
        create_revision: 2,
        mod_revision: 9,
        version: 3,
        sub: 7,
        lease: -1,
    };
    let stored = encode_entry(&e);
    let nl = stored.iter().position(|&b| b == b'\n').unwrap();
    assert_eq!(header_fast(&stored[..nl]), Some((2, 9, 3, -1, true, 7)));
}
