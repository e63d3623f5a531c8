//! The wasm binding's translation (crates/wasm/src/), below the JS wrapper: ids
//! as u32 halves, error objects with `code`, the named scratch slots,
//! string vs bytes values, previous entries, tick and range rows, defaults. Runs under `wasm-pack test --node` and, with
//! WASM_BINDGEN_USE_BROWSER=1, `wasm-pack test --headless --chrome`.
#![cfg(target_arch = "wasm32")]

use edge_lease::{defaults, pages_to_bytes, RangeRow, RawLessor, RawRestore, RevokedRow, Slot};
use edge_lease_core::Config;
use js_sys::{Array, Float64Array, Function, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

const T0: f64 = 1_700_000_000_000.0;

/// The core's defaults with some options changed, as the wrapper passes them.
fn config(changes: &[(&str, f64)]) -> js_sys::Object {
    let c = defaults();
    for (k, v) in changes {
        Reflect::set(&c, &(*k).into(), &(*v).into()).unwrap();
    }
    c
}

fn raw() -> RawLessor {
    RawLessor::new(&config(&[])).unwrap()
}

/// The named scratch slots, read through the view as the wrapper does.
fn scratch(r: &RawLessor, slots: &[Slot]) -> Vec<f64> {
    let v: Float64Array = r.scratch();
    slots.iter().map(|&s| v.get_index(s as u32)).collect()
}

const ID: [Slot; 2] = [Slot::IdHi, Slot::IdLo];
/// An entry's numbers: create and mod revision, version, lease halves.
const ENTRY: [Slot; 5] = [
    Slot::CreateRevision,
    Slot::ModRevision,
    Slot::Version,
    Slot::IdHi,
    Slot::IdLo,
];

/// The entry's value read from wasm memory as the wrapper does: (bytes, text).
fn shown_value(r: &RawLessor) -> (Vec<u8>, bool) {
    let s = scratch(r, &[Slot::ValuePtr, Slot::ValueLen, Slot::Text]);
    let memory: js_sys::WebAssembly::Memory = RawLessor::memory().unchecked_into();
    let bytes =
        Uint8Array::new_with_byte_offset_and_length(&memory.buffer(), s[0] as u32, s[1] as u32);
    (bytes.to_vec(), s[2] == 1.0)
}

/// `get`, then the value read from wasm memory.
fn value(r: &mut RawLessor, now: f64, key: &str) -> Option<(Vec<u8>, bool)> {
    r.get(now, key).then(|| shown_value(r))
}

/// Calls a hot-path method, which returns NaN on error and keeps the error
/// for `take_error`, and gives its result as a `Result`.
macro_rules! hot {
    ($r:ident . $m:ident ( $($a:expr),* $(,)? )) => {{
        let v = $r.$m($($a),*);
        if v.is_nan() {
            Err($r.take_error())
        } else {
            Ok(v)
        }
    }};
}

fn code(e: &JsValue) -> String {
    assert!(e.is_instance_of::<js_sys::Error>(), "not an Error: {e:?}");
    Reflect::get(e, &"code".into())
        .unwrap()
        .as_string()
        .unwrap()
}

fn strings(a: &JsValue) -> Vec<String> {
    Array::from(a)
        .iter()
        .map(|k| k.as_string().unwrap())
        .collect()
}

#[wasm_bindgen_test]
fn ids_cross_as_u32_halves_including_negative() {
    let mut r = raw();
    // -1 is all ones in both halves.
    assert_eq!(hot!(r.grant(T0, 10.0, u32::MAX, u32::MAX)), Ok(10.0));
    assert_eq!(scratch(&r, &ID), [4294967295.0, 4294967295.0]);
    // i64::MIN: only the top bit of the high half.
    assert_eq!(hot!(r.grant(T0, 20.0, 0x8000_0000, 0)), Ok(20.0));
    assert_eq!(scratch(&r, &ID), [2147483648.0, 0.0]);
    // The halves are not swapped: hi 0, lo 0xff is id 255.
    assert_eq!(hot!(r.grant(T0, 30.0, 0, 0xff)), Ok(30.0));
    assert_eq!(scratch(&r, &ID), [0.0, 255.0]);
    assert_eq!(hot!(r.renew(T0, 0, 0xff)).unwrap(), 30.0);
    hot!(r.renew(T0, 0xff, 0)).unwrap_err();

    // leases(): flat [hi, lo, ...], soonest deadline first.
    assert_eq!(
        r.leases(T0).to_vec(),
        [u32::MAX, u32::MAX, 0x8000_0000, 0, 0, 0xff]
    );

    // 0/0 asks for a fresh id, which is never 0.
    assert_eq!(hot!(r.grant(T0, 5.0, 0, 0)), Ok(5.0));
    let s = scratch(&r, &ID);
    assert!(s[0] != 0.0 || s[1] != 0.0);
    assert!(s[0] < 4294967296.0 && s[1] < 4294967296.0);
}

#[wasm_bindgen_test]
fn errors_are_error_objects_with_a_code() {
    let mut r = raw();
    let e = hot!(r.renew(T0, 0, 1)).unwrap_err();
    assert_eq!(code(&e), "LeaseNotFound");
    let msg = e.unchecked_ref::<js_sys::Error>().message();
    assert_eq!(String::from(msg), "lease 0000000000000001 not found");

    hot!(r.grant(T0, 10.0, 0, 1)).unwrap();
    assert_eq!(
        code(&hot!(r.grant(T0, 10.0, 0, 1)).unwrap_err()),
        "LeaseExists"
    );
    assert_eq!(
        code(&hot!(r.grant(T0, 9e9 + 1.0, 0, 0)).unwrap_err()),
        "LeaseTtlTooLarge"
    );
    assert_eq!(
        code(&hot!(r.put_str(T0, "", "v", 0, 0, false, false)).unwrap_err()),
        "InvalidArgument"
    );
    assert_eq!(
        code(&hot!(r.put_str(T0, "k", "v", 0, 2, false, false)).unwrap_err()),
        "LeaseNotFound"
    );
    assert_eq!(code(&r.promote(T0, -1.0).unwrap_err()), "InvalidArgument");
    let bad = RawLessor::new(&config(&[("minTtl", 0.0)]));
    assert_eq!(code(&bad.err().unwrap()), "InvalidArgument");
}

/// Stored entries packed as js/codec.js's packEntries does.
fn pack(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in entries {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
    out
}

#[wasm_bindgen_test]
fn a_corrupt_entry_names_its_key() {
    // (Refused as it is handed over, before any lessor is made.)
    let entries = pack(&[("v1/lease/zz", b"junk")]);
    let e = RawRestore::new().add(&entries).err().unwrap();
    assert_eq!(code(&e), "CorruptEntry");
    assert_eq!(
        Reflect::get(&e, &"entry".into())
            .unwrap()
            .as_string()
            .unwrap(),
        "v1/lease/zz"
    );
}

/// A storage batch in the layout writes are handed over in: puts, then
/// deletes, each list after its u32 count.
fn batch(puts: &[(&str, &[u8])], deletes: &[&str]) -> Vec<u8> {
    let mut out = (puts.len() as u32).to_le_bytes().to_vec();
    out.extend(pack(puts));
    out.extend_from_slice(&(deletes.len() as u32).to_le_bytes());
    for k in deletes {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
    }
    out
}

#[wasm_bindgen_test]
fn the_journal_gives_the_last_state_of_what_it_names() {
    // A store's list holds a stale key entry, and one the journal deletes.
    let stored = pack(&[
        ("v1/revision", b"3"),
        (
            "v1/key/a",
            b"create=2 mod=2 version=1 lease=0000000000000000 text=1\nold",
        ),
        (
            "v1/key/b",
            b"create=2 mod=2 version=1 lease=0000000000000000 text=1\nold",
        ),
    ]);
    let new = b"create=2 mod=3 version=2 lease=0000000000000000 text=1\nnew";
    let mut r = RawRestore::new();
    r.journal(&batch(&[("v1/key/a", new)], &["v1/key/b"]))
        .unwrap();
    r.add(&stored).unwrap();
    let mut l = RawLessor::restore(&defaults(), r, T0, None).unwrap();
    assert_eq!(value(&mut l, T0, "a"), Some((b"new".to_vec(), true)));
    assert_eq!(value(&mut l, T0, "b"), None);
    // Bytes that are not one whole batch, or a journal after the entries.
    let mut r = RawRestore::new();
    let whole = batch(&[("v1/key/a", new)], &[]);
    let e = r.journal(&whole[..whole.len() - 1]).err().unwrap();
    assert_eq!(code(&e), "InvalidArgument");
    r.add(&stored).unwrap();
    assert_eq!(code(&r.journal(&whole).err().unwrap()), "InvalidArgument");
}

/// Many keys a journal names among many more it does not: each named one
/// takes the journal's state (the filter in front of the search never
/// misses one) and no other does.
#[wasm_bindgen_test]
fn many_journaled_keys_among_many_more() {
    let name = |i: usize| format!("v1/key/k{i:05}");
    let old: Vec<(String, Vec<u8>)> = (0..6000)
        .map(|i| {
            (
                name(i),
                b"create=2 mod=2 version=1 lease=0000000000000000 text=1\nold".to_vec(),
            )
        })
        .collect();
    let mut stored: Vec<(&str, &[u8])> = vec![("v1/revision", b"3")];
    stored.extend(old.iter().map(|(k, v)| (k.as_str(), v.as_slice())));
    let named: Vec<String> = (0..6000).step_by(3).map(name).collect();
    let new = b"create=2 mod=3 version=2 lease=0000000000000000 text=1\nnew";
    let later: Vec<(&str, &[u8])> = named.iter().map(|k| (k.as_str(), &new[..])).collect();
    let mut r = RawRestore::new();
    for part in later.chunks(500) {
        r.journal(&batch(part, &[])).unwrap();
    }
    r.add(&pack(&stored)).unwrap();
    let mut l = RawLessor::restore(&defaults(), r, T0, None).unwrap();
    for i in 0..6000 {
        let want: &[u8] = if i % 3 == 0 { b"new" } else { b"old" };
        assert_eq!(
            value(&mut l, T0, &format!("k{i:05}")),
            Some((want.to_vec(), true)),
            "{i}"
        );
    }
}

#[wasm_bindgen_test]
fn get_fills_scratch_and_values_keep_their_type() {
    let mut r = raw();
    hot!(r.grant(T0, 10.0, 0x0102_0304, 0x0506_0708)).unwrap();
    // Revisions start at 1 (as in etcd): the first put is revision 2.
    assert_eq!(
        hot!(r.put_str(T0, "text", "héllo", 0x0102_0304, 0x0506_0708, false, false)).unwrap(),
        2.0
    );
    assert_eq!(scratch(&r, &[Slot::Created, Slot::HasPrev]), [1.0, 0.0]);
    assert_eq!(
        hot!(r.put_str(T0, "text", "again", 0x0102_0304, 0x0506_0708, false, false)).unwrap(),
        3.0
    );
    assert_eq!(
        scratch(&r, &[Slot::Created, Slot::HasPrev]),
        [0.0, 0.0],
        "overwritten, not created; no previous entry unless asked"
    );
    hot!(r.put_bytes(T0, "bin", &[0, 255, 128], 0, 0, false, false)).unwrap();

    // Text keeps its flag and its UTF-8 bytes, read in place.
    assert_eq!(value(&mut r, T0, "text"), Some((b"again".to_vec(), true)));
    assert_eq!(scratch(&r, &ENTRY), [2.0, 3.0, 2.0, 16909060.0, 84281096.0]);

    // Bytes are flagged as bytes, detached key: lease 0/0.
    assert_eq!(value(&mut r, T0, "bin"), Some((vec![0, 255, 128], false)));
    assert_eq!(scratch(&r, &ENTRY), [4.0, 4.0, 1.0, 0.0, 0.0]);

    assert_eq!(value(&mut r, T0, "missing"), None);

    // An if-absent put on an existing key writes nothing: created = 0.
    hot!(r.put_str(T0, "bin", "x", 0, 0, true, false)).unwrap();
    assert_eq!(scratch(&r, &[Slot::Created]), [0.0]);
    assert_eq!(value(&mut r, T0, "bin"), Some((vec![0, 255, 128], false)));
}

/// Writes `parts` into the inbox one after the other, as the wrapper does.
fn fill_inbox(r: &RawLessor, parts: &[&[u8]]) {
    let view = r.inbox();
    let mut at = 0;
    for p in parts {
        view.subarray(at, at + p.len() as u32).copy_from(p);
        at += p.len() as u32;
    }
}

#[wasm_bindgen_test]
fn the_inbox_takes_a_get_key_and_a_put_key_and_value() {
    let mut r = raw();
    hot!(r.grant(T0, 10.0, 0, 7)).unwrap();
    fill_inbox(&r, &[b"svc/1", b"alive"]);
    assert_eq!(hot!(r.put_in(T0, 5, 5, 0, 7, false, false)).unwrap(), 2.0);
    assert_eq!(scratch(&r, &[Slot::Created]), [1.0]);
    // The same entry as put_str would make: text, with its lease.
    assert_eq!(value(&mut r, T0, "svc/1"), Some((b"alive".to_vec(), true)));
    assert_eq!(scratch(&r, &ID), [0.0, 7.0]);
    fill_inbox(&r, &[b"svc/1"]);
    assert!(r.get_in(T0, 5));
    assert_eq!(shown_value(&r), (b"alive".to_vec(), true));
    assert!(!r.get_in(T0, 4), "svc/ is not a key");
    // A key and value that fill the inbox exactly, and lengths past it:
    // no key for a get, InvalidArgument for a put, nothing written.
    let n = r.inbox().length();
    let key = vec![b'k'; 100];
    let val = vec![b'v'; n as usize - 100];
    fill_inbox(&r, &[&key, &val]);
    assert_eq!(
        hot!(r.put_in(T0, 100, n - 100, 0, 0, false, false)).unwrap(),
        3.0
    );
    fill_inbox(&r, &[&key]);
    assert!(r.get_in(T0, 100));
    assert_eq!(shown_value(&r).0, val);
    assert!(!r.get_in(T0, n + 1));
    let e = hot!(r.put_in(T0, 100, n - 99, 0, 0, false, false)).unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    let e = hot!(r.put_in(T0, u32::MAX, u32::MAX, 0, 0, false, false)).unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    assert_eq!(r.revision(), 3.0, "a refused put writes nothing");
}

#[wasm_bindgen_test]
fn put_and_delete_show_the_previous_entry() {
    let mut r = raw();
    hot!(r.grant(T0, 10.0, 0, 5)).unwrap();
    hot!(r.put_str(T0, "k", "one", 0, 5, false, false)).unwrap();

    // Asked for: the entry the put replaced, value read in place.
    assert_eq!(hot!(r.put_bytes(T0, "k", &[9], 0, 0, false, true)), Ok(3.0));
    assert_eq!(scratch(&r, &[Slot::Created, Slot::HasPrev]), [0.0, 1.0]);
    assert_eq!(scratch(&r, &ENTRY), [2.0, 2.0, 1.0, 0.0, 5.0]);
    assert_eq!(shown_value(&r), (b"one".to_vec(), true));

    // Asked for, but the key is new: none.
    hot!(r.put_str(T0, "new", "v", 0, 0, false, true)).unwrap();
    assert_eq!(scratch(&r, &[Slot::Created, Slot::HasPrev]), [1.0, 0.0]);

    // A refused if-absent put always shows the holder.
    assert_eq!(hot!(r.put_str(T0, "k", "two", 0, 0, true, false)), Ok(4.0));
    assert_eq!(scratch(&r, &[Slot::Created, Slot::HasPrev]), [0.0, 1.0]);
    assert_eq!(shown_value(&r), (vec![9], false));

    // delete: the deleted entry, always (its lease is the delete event's).
    hot!(r.put_str(T0, "k", "three", 0, 5, false, false)).unwrap();
    assert_eq!(r.delete(T0, "k"), Ok(6.0));
    assert_eq!(scratch(&r, &[Slot::Deleted, Slot::HasPrev]), [1.0, 1.0]);
    assert_eq!(scratch(&r, &ENTRY), [2.0, 5.0, 3.0, 0.0, 5.0]);
    assert_eq!(shown_value(&r), (b"three".to_vec(), true));
    assert_eq!(r.delete(T0, "k"), Ok(6.0));
    assert_eq!(scratch(&r, &[Slot::Deleted, Slot::HasPrev]), [0.0, 0.0]);
}

#[wasm_bindgen_test]
fn range_rows_are_named() {
    let mut r = raw();
    hot!(r.grant(T0, 10.0, 1, 2)).unwrap();
    hot!(r.put_str(T0, "b", "text", 1, 2, false, false)).unwrap();
    hot!(r.put_bytes(T0, "a", &[1], 0, 0, false, false)).unwrap();
    let rows = r.range(T0, "");
    assert_eq!(rows.length(), 2);
    let row = Array::from(&rows.get(1));
    let field = |f: RangeRow| row.get(f as u32);
    assert_eq!(field(RangeRow::Key).as_string().unwrap(), "b");
    assert_eq!(field(RangeRow::Value).as_string().unwrap(), "text");
    let numbers: Vec<f64> = [
        RangeRow::CreateRevision,
        RangeRow::ModRevision,
        RangeRow::Version,
        RangeRow::LeaseHi,
        RangeRow::LeaseLo,
    ]
    .iter()
    .map(|&f| field(f).as_f64().unwrap())
    .collect();
    assert_eq!(numbers, [2.0, 2.0, 1.0, 1.0, 2.0]);
    let a = Array::from(&rows.get(0));
    assert!(a.get(RangeRow::Value as u32).is_instance_of::<Uint8Array>());
}

#[wasm_bindgen_test]
fn defaults_are_the_cores() {
    let d = defaults();
    let get = |k: &str| Reflect::get(&d, &k.into()).unwrap().as_f64().unwrap();
    let c = Config::default();
    assert_eq!(get("minTtl"), c.min_ttl as f64);
    assert_eq!(get("revokeRate"), c.revoke_rate as f64);
    assert_eq!(get("maxKeyBytes"), c.max_key_bytes as f64);
    assert_eq!(get("maxValueBytes"), c.max_value_bytes as f64);
    assert_eq!(get("maxKeysPerLease"), c.max_keys_per_lease as f64);
    assert_eq!(get("maxTxnOps"), c.max_txn_ops as f64);
    assert_eq!(get("history"), c.history as f64);
    assert_eq!(get("quotaBytes"), c.quota_bytes as f64);
    assert_eq!(js_sys::Object::keys(&d).length(), 8);
}

#[wasm_bindgen_test]
fn the_scratch_view_empties_when_memory_grows() {
    let mut r = raw();
    let view = r.scratch();
    let inbox = r.inbox();
    let before = RawLessor::memory_bytes();
    // Values above the current memory force it to grow.
    let big = vec![7u8; before as usize];
    let mut lessor = RawLessor::new(&config(&[("maxValueBytes", 2.0 * before)])).unwrap();
    hot!(lessor.put_bytes(T0, "big", &big, 0, 0, false, false)).unwrap();
    assert!(RawLessor::memory_bytes() > before);
    assert_eq!(view.length(), 0, "the old view is detached");
    assert_eq!(inbox.length(), 0, "the old inbox view too");
    hot!(r.grant(T0, 10.0, 0, 9)).unwrap();
    assert_eq!(scratch(&r, &ID), [0.0, 9.0], "a fresh view works");
    fill_inbox(&r, &[b"k", b"v"]);
    hot!(r.put_in(T0, 1, 1, 0, 9, false, false)).unwrap();
    assert_eq!(
        value(&mut r, T0, "k"),
        Some((b"v".to_vec(), true)),
        "and a fresh inbox"
    );
}

/// The fixed fields of the first RevokedRow in `rows`.
fn head(rows: &[f64]) -> [f64; 4] {
    [
        RevokedRow::IdHi,
        RevokedRow::IdLo,
        RevokedRow::Revision,
        RevokedRow::KeyCount,
    ]
    .map(|f| rows[f as usize])
}

#[wasm_bindgen_test]
fn tick_rows_and_time_to_live() {
    let mut r = raw();
    hot!(r.grant(T0, 1.0, u32::MAX, 0xffff_fffe)).unwrap(); // -2
    hot!(r.put_str(T0, "a", "1", u32::MAX, 0xffff_fffe, false, false)).unwrap();
    hot!(r.put_str(T0, "b", "2", u32::MAX, 0xffff_fffe, false, false)).unwrap();

    let keys = r.time_to_live(T0 + 400.0, u32::MAX, 0xffff_fffe, true, false);
    assert_eq!(strings(&keys), ["a", "b"]);
    assert_eq!(
        scratch(&r, &[Slot::Ttl, Slot::TtlMs, Slot::GrantedTtl]),
        [0.0, 600.0, 1.0]
    );
    assert!(r.time_to_live(T0, 0, 42, true, false).is_undefined());

    assert_eq!(r.next_deadline(), T0 + 1000.0);
    assert_eq!(r.tick(T0 + 999.0).length(), 0);
    // Flat RevokedRows, keys in one string.
    let rows = r.tick(T0 + 1000.0).to_vec();
    // Puts were revisions 2 and 3; the expiry deletes both at 4.
    assert_eq!(
        head(&rows),
        [4294967295.0, 4294967294.0, 4.0, 2.0],
        "[id hi, id lo, revision, key count]"
    );
    assert_eq!(rows[RevokedRow::KeyLengths as usize..], [1.0, 1.0]);
    assert_eq!(r.take_keys(), "ab");
    // Key lengths are UTF-16 units, as JS slices them.
    hot!(r.grant(T0 + 1000.0, 1.0, 0, 7)).unwrap();
    hot!(r.put_str(T0 + 1000.0, "é✓𝄞", "v", 0, 7, false, false)).unwrap();
    let rows = r.tick(T0 + 2000.0).to_vec();
    assert_eq!(head(&rows), [0.0, 7.0, 6.0, 1.0]);
    assert_eq!(rows[RevokedRow::KeyLengths as usize..], [4.0]);
    assert_eq!(r.take_keys(), "é✓𝄞");
    assert!(r.take_error().is_undefined());
    assert!(r.next_deadline().is_nan());
    assert!(!r.get(T0 + 1000.0, "a"));
}

#[wasm_bindgen_test]
fn storage_gets_batches_and_a_throw_fails_the_operation() {
    // The callback records each batch, and throws while `globalThis.failWrites` is set.
    let write = Function::new_with_args(
        "batch",
        "if (globalThis.failWrites) throw new Error('disk full'); (globalThis.batches ??= []).push(batch);",
    );
    let global = js_sys::global();
    let set = |k: &str, v: &JsValue| Reflect::set(&global, &k.into(), v).unwrap();
    set("batches", &Array::new());
    set("failWrites", &false.into());

    let mut r = RawLessor::restore(&config(&[]), RawRestore::new(), T0, Some(write)).unwrap();
    hot!(r.put_bytes(T0, "k", &[1, 2], 0, 0, false, false)).unwrap();
    let batches = Array::from(&Reflect::get(&global, &"batches".into()).unwrap());
    let last = batches.get(batches.length() - 1);
    assert!(last.is_instance_of::<Uint8Array>(), "one packed buffer");
    // u32 count of puts, each (u32 length, key, u32 length, value), then
    // u32 count of deletes, each (u32 length, key); little endian.
    let bytes = Uint8Array::from(last).to_vec();
    let mut at = 0;
    let u32_at = |at: &mut usize| {
        let n = u32::from_le_bytes(bytes[*at..*at + 4].try_into().unwrap()) as usize;
        *at += 4;
        n
    };
    let mut puts = Vec::new();
    for _ in 0..u32_at(&mut at) {
        let k = u32_at(&mut at);
        let key = String::from_utf8(bytes[at..at + k].to_vec()).unwrap();
        at += k;
        let v = u32_at(&mut at);
        puts.push((key, bytes[at..at + v].to_vec()));
        at += v;
    }
    assert_eq!(u32_at(&mut at), 0, "no deletes");
    assert_eq!(at, bytes.len());
    let key = puts.iter().find(|(k, _)| k == "v1/key/k");
    assert!(key.is_some_and(|(_, v)| v.ends_with(&[1, 2])), "{puts:?}");

    set("failWrites", &true.into());
    let e = hot!(r.put_str(T0, "k", "new", 0, 0, false, false)).unwrap_err();
    assert_eq!(code(&e), "StorageFailed");
    set("failWrites", &false.into());
    assert_eq!(
        value(&mut r, T0, "k"),
        Some((vec![1, 2], false)),
        "the failed put changed nothing"
    );
}

// Issue 13, item 10: memoryBytes() read 0 at 4 GiB (65536 pages overflowed
// a 32-bit usize).
#[wasm_bindgen_test]
fn memory_bytes_count_past_four_gib() {
    assert_eq!(pages_to_bytes(65536), 4_294_967_296.0);
    assert_eq!(pages_to_bytes(1), 65536.0);
}
