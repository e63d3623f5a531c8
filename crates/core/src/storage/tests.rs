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

#[test]
fn a_batch_is_kept_in_the_layout_it_crosses_in() {
    use super::Batch;
    let mut b = Batch::default();
    assert!(b.is_empty());
    b.put("v1/revision", b"7");
    b.delete_with(&|o| push_key_key(o, b"a b"));
    b.put_with(&|o| push_old_key(o, 7, 1, b"k"), &|o| push_old(o, None));
    b.delete("v1/lease/0000000000000001");
    assert!(!b.is_empty());
    assert_eq!(
        b.puts().collect::<Vec<_>>(),
        [
            ("v1/revision", &b"7"[..]),
            ("v1/old/0000000000000007.1/k", b"deleted")
        ]
    );
    assert_eq!(
        b.deletes().collect::<Vec<_>>(),
        ["v1/key/a%20b", "v1/lease/0000000000000001"]
    );
    // As js/codec.js reads it: counts and lengths u32 little-endian.
    let mut want = Vec::new();
    let field = |w: &mut Vec<u8>, f: &[u8]| {
        w.extend_from_slice(&(f.len() as u32).to_le_bytes());
        w.extend_from_slice(f);
    };
    want.extend_from_slice(&2u32.to_le_bytes());
    for f in [
        &b"v1/revision"[..],
        b"7",
        b"v1/old/0000000000000007.1/k",
        b"deleted",
    ] {
        field(&mut want, f);
    }
    want.extend_from_slice(&2u32.to_le_bytes());
    for f in [&b"v1/key/a%20b"[..], b"v1/lease/0000000000000001"] {
        field(&mut want, f);
    }
    let mut packed = vec![9; 3];
    b.pack_into(&mut packed);
    assert_eq!(packed, want);
}

#[test]
fn record_names_escape_as_before() {
    // Runs of plain bytes between escapes, at either end and none at all.
    for (key, name) in [
        (&b""[..], "v1/key/"),
        (b"abc", "v1/key/abc"),
        (b" a", "v1/key/%20a"),
        (b"a ", "v1/key/a%20"),
        (b"a\x00\xffb/c", "v1/key/a%00%FFb/c"),
        (b"\n\n", "v1/key/%0A%0A"),
    ] {
        assert_eq!(key_key(key), name);
    }
    assert_eq!(old_key(255, 0, b"x y"), "v1/old/00000000000000ff/x%20y");
}

#[test]
fn a_big_batch_reads_and_packs_across_its_chunks() {
    use super::Batch;
    let mut b = Batch::default();
    let mut want_puts = Vec::new();
    // Puts of up to 300 bytes and five of 70 KiB (more than a chunk), and
    // 50k deletes: many chunks of each.
    for i in 0..5_000u32 {
        let len = if i % 1000 == 7 {
            70_000
        } else {
            i as usize % 300
        };
        let value = vec![(i % 251) as u8; len];
        let key = old_key(i.into(), i % 3, b"k");
        b.put(&key, &value);
        want_puts.push((key, value));
    }
    for i in 0..50_000u64 {
        b.delete_with(&|o| push_lease_key(o, i as i64));
    }
    let puts: Vec<(String, Vec<u8>)> = b.puts().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
    assert_eq!(puts, want_puts);
    let deletes: Vec<&str> = b.deletes().collect();
    assert_eq!(deletes.len(), 50_000);
    assert_eq!(deletes[49_999], lease_key(49_999));
    let mut packed = Vec::new();
    b.pack_into(&mut packed);
    let mut want = Vec::new();
    want.extend_from_slice(&5_000u32.to_le_bytes());
    for (k, v) in &want_puts {
        for f in [k.as_bytes(), v] {
            want.extend_from_slice(&(f.len() as u32).to_le_bytes());
            want.extend_from_slice(f);
        }
    }
    want.extend_from_slice(&50_000u32.to_le_bytes());
    for d in &deletes {
        want.extend_from_slice(&(d.len() as u32).to_le_bytes());
        want.extend_from_slice(d.as_bytes());
    }
    assert_eq!(packed, want);
}

/// Lease and key records are binary: every field's extremes round-trip.
#[test]
fn binary_records_round_trip_at_the_extremes() {
    for l in [
        StoredLease {
            ttl: 1,
            deadline: None,
            remaining: 0,
        },
        StoredLease {
            ttl: i64::MAX,
            deadline: Some(i64::MIN),
            remaining: i64::MAX,
        },
        StoredLease {
            ttl: 127,
            deadline: Some(-1),
            remaining: 128,
        },
    ] {
        let v = encode_lease(&l);
        assert_eq!(v[0], BINARY);
        assert_eq!(lease_fields("k", &v).unwrap(), l);
    }
    for (lease, sub, value) in [
        (0, 0, &b""[..]),
        (-1, u32::MAX, b"\n\x01create=2"),
        (i64::MIN, 1, b"v"),
        (i64::MAX, 127, b"\xff"),
    ] {
        let e = Entry {
            value: value.into(),
            text: false,
            create_revision: 2,
            mod_revision: 1 << 53,
            version: 1 << 53,
            sub,
            lease,
        };
        let v = encode_entry(&e);
        assert_eq!(v[0], BINARY);
        let snap = decode([
            (REVISION_KEY.to_string(), encode_revision(1 << 53)),
            (key_key(b"k"), v),
        ]);
        assert_eq!(
            snap.map(|s| s.keys),
            Ok(vec![(b"k"[..].into(), e)]),
            "{lease} {sub}"
        );
    }
    // Small numbers take a byte each: 1 + flags + 5 fields + the value.
    let e = Entry {
        value: b"up".to_vec().into(),
        text: true,
        create_revision: 2,
        mod_revision: 2,
        version: 1,
        sub: 0,
        lease: 0,
    };
    assert_eq!(encode_entry(&e), b"\x01\x01\x02\x02\x01\x00\x00up");
}

/// Only what the encoder writes is read: the shortest varints, known flags,
/// a lease record with nothing after it, a text flag over UTF-8.
#[test]
fn bad_binary_records_name_the_entry() {
    let lease: &[&[u8]] = &[
        b"\x01",
        b"\x01\x00",
        b"\x01\x02\x0a\x00",
        b"\x01\x00\x0a",
        b"\x01\x00\x0a\x00\x00",
        b"\x01\x00\x8a\x00\x00",
        b"\x01\x00\x0a\x80",
        b"\x01\x00\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
        b"\x01\x00\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        b"\x01\x01\x0a\x00",
    ];
    let refused = |name: &str, values: &[&[u8]]| {
        for v in values {
            match decode([(name, *v)]) {
                Err(Error::CorruptEntry { key, .. }) => assert_eq!(key, name),
                other => panic!("{v:x?}: expected CorruptEntry, got {other:?}"),
            }
        }
    };
    refused("v1/lease/0000000000000001", lease);
    let key: &[&[u8]] = &[
        b"\x01",
        b"\x01\x00",
        b"\x01\x00\x02\x02\x01\x00",
        b"\x01\x02\x02\x02\x01\x00\x00",
        b"\x01\x00\x02\x02\x01\x00\x80\x80\x80\x80\x10",
        b"\x01\x01\x02\x02\x01\x00\x00\xff",
        b"\x01\x00\x02\x01\x01\x00\x00",
        b"\x01\x00\x02\x02\x00\x00\x00",
    ];
    refused("v1/key/a", key);
}
