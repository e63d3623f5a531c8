//! The stored layout: how leases, keys and the revision are written as
//! store entries, and how a whole store is read back. Version 1 (all keys
//! are ASCII, values are bytes):
//!
//! | key | value |
//! | --- | --- |
//! | `v1/revision` | the store revision, decimal |
//! | `v1/lease/<16 hex digits>` | `ttl=<s> deadline=<epoch ms or none> remaining=<ms>` |
//! | `v1/key/<percent-encoded key>` | `create=<rev> mod=<rev> version=<n> lease=<16 hex> text=<0/1>[ sub=<n>]` `\n` then the value bytes |
//! | `v1/old/<16 hex revision>[.<sub>]/<percent-encoded key>` | a superseded version of the key from that revision on: an entry as above, or `deleted` |
//!
//! `sub` is the change's sub-revision, its place among its revision's
//! changes, written only when above 0 (older stores have none: 0).
//! | `v1/compacted` | the compaction point: history before it is gone, decimal (-1: never compacted) |
//! | `v1/host/<name>` | an entry the host keeps beside the lessor's state (the server's alarms): its bytes |
//!
//! A lease's keys are not listed in its record: they are found from the keys'
//! own `lease=` fields on restore, as etcd recovers its item sets.

use crate::error::{Error, Result};
use crate::kv::Entry;
use crate::lease::{LeaseId, MAX_LEASE_TTL};

pub const REVISION_KEY: &str = "v1/revision";
/// Revisions and versions stay within what JS numbers hold exactly (2^53),
/// so counting up from a stored value can never overflow.
const MAX_COUNTER: i64 = 1 << 53;
const LEASE_PREFIX: &str = "v1/lease/";
const KEY_PREFIX: &str = "v1/key/";
const OLD_PREFIX: &str = "v1/old/";
pub const COMPACTED_KEY: &str = "v1/compacted";
const HOST_PREFIX: &str = "v1/host/";
/// The longest host entry name and value, and how many there may be (they
/// are a few small records, not data).
pub const MAX_HOST_NAME: usize = 64;
pub const MAX_HOST_VALUE: usize = 1 << 20;
pub const MAX_HOST_ENTRIES: usize = 64;
const TOMBSTONE: &[u8] = b"deleted";

/// What a lease record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredLease {
    pub ttl: i64,
    /// None while the lease had no deadline (a standby lessor).
    pub deadline: Option<i64>,
    /// Checkpointed remaining time in ms, 0 if none.
    pub remaining: i64,
}

/// Everything decoded from a store.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub revision: i64,
    pub leases: Vec<(LeaseId, StoredLease)>,
    pub keys: Vec<(Vec<u8>, Entry)>,
    /// Superseded versions: (revision, sub-revision, key, entry or None for
    /// a delete).
    pub old: Vec<(i64, u32, Vec<u8>, Option<Entry>)>,
    /// The compaction point, if the store has one: stores written before
    /// history was kept have none, and hold no history.
    pub compacted: i64,
    pub compacted_stored: bool,
    /// The host's entries: (name, bytes).
    pub host: Vec<(String, Vec<u8>)>,
}

/// Whether `name` may name a host entry: 1 to [`MAX_HOST_NAME`] of
/// `A-Z a-z 0-9 . _ -`, so that it is its own stored key.
pub fn valid_host_name(name: &str) -> bool {
    (1..=MAX_HOST_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

pub fn host_key(name: &str) -> String {
    format!("{HOST_PREFIX}{name}")
}

pub fn lease_key(id: LeaseId) -> String {
    format!("{LEASE_PREFIX}{:016x}", id as u64)
}

pub fn encode_lease(l: &StoredLease) -> Vec<u8> {
    let deadline = match l.deadline {
        Some(d) => d.to_string(),
        None => "none".to_string(),
    };
    format!(
        "ttl={} deadline={deadline} remaining={}",
        l.ttl, l.remaining
    )
    .into_bytes()
}

pub fn encode_revision(rev: i64) -> Vec<u8> {
    rev.to_string().into_bytes()
}

/// Bytes that stay readable in a stored key; everything else is %XX.
fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b':' | b'@')
}

pub fn key_key(key: &[u8]) -> String {
    let mut s = String::with_capacity(KEY_PREFIX.len() + key.len());
    s.push_str(KEY_PREFIX);
    push_key_name(&mut s, key);
    s
}

fn push_key_name(s: &mut String, key: &[u8]) {
    for &b in key {
        if plain(b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
}

/// The record of a superseded version of `key` from `revision` on.
pub fn old_key(revision: i64, sub: u32, key: &[u8]) -> String {
    let mut s = if sub > 0 {
        format!("{OLD_PREFIX}{:016x}.{sub}/", revision as u64)
    } else {
        format!("{OLD_PREFIX}{:016x}/", revision as u64)
    };
    push_key_name(&mut s, key);
    s
}

/// A superseded version: the entry, or None for a delete.
pub fn encode_old(e: Option<&Entry>) -> Vec<u8> {
    e.map_or_else(|| TOMBSTONE.to_vec(), encode_entry)
}

pub fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut v = format!(
        "create={} mod={} version={} lease={:016x} text={}",
        e.create_revision, e.mod_revision, e.version, e.lease as u64, e.text as u8
    )
    .into_bytes();
    if e.sub > 0 {
        v.extend_from_slice(b" sub=");
        v.extend_from_slice(e.sub.to_string().as_bytes());
    }
    v.push(b'\n');
    v.extend_from_slice(&e.value);
    v
}

fn corrupt(key: &str, reason: impl Into<String>) -> Error {
    Error::CorruptEntry {
        key: key.to_string(),
        reason: reason.into(),
    }
}

fn parse_hex_id(key: &str, s: &str) -> Result<LeaseId> {
    parse_hex(key, "lease id", s)
}

fn parse_hex(key: &str, what: &str, s: &str) -> Result<i64> {
    // Only the form the encoder writes: one number, one name.
    let mut v = 0u64;
    for b in s.bytes() {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => 16,
        };
        if d == 16 {
            v = u64::MAX;
            break;
        }
        v = v << 4 | u64::from(d);
    }
    if s.len() != 16 || (v == u64::MAX && s != "ffffffffffffffff") {
        return Err(corrupt(
            key,
            format!("{what} \"{s}\" is not 16 lowercase hex digits"),
        ));
    }
    Ok(v as i64)
}

fn decode_key_name(key: &str, s: &str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .ok_or_else(|| corrupt(key, "truncated %-escape"))?;
            // Only the escapes `key_key` writes (uppercase, for bytes it does
            // not leave plain), so two names never decode to the same key.
            if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')) {
                return Err(corrupt(key, "bad %-escape"));
            }
            let v = u8::from_str_radix(hex, 16).map_err(|_| corrupt(key, "bad %-escape"))?;
            if plain(v) {
                return Err(corrupt(key, "needless %-escape"));
            }
            out.push(v);
            i += 3;
        } else if plain(b[i]) {
            out.push(b[i]);
            i += 1;
        } else {
            return Err(corrupt(key, "unescaped byte in key name"));
        }
    }
    if out.is_empty() {
        return Err(corrupt(key, "empty key name"));
    }
    Ok(out)
}

/// Splits `a=1 b=2` into its values, in the order of `names`, exactly.
fn fields<'a, const N: usize>(key: &str, text: &'a str, names: [&str; N]) -> Result<[&'a str; N]> {
    let mut out = [""; N];
    let mut parts = text.split(' ');
    for (i, name) in names.iter().enumerate() {
        let part = parts
            .next()
            .ok_or_else(|| corrupt(key, format!("missing field {name}")))?;
        out[i] = part
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .ok_or_else(|| corrupt(key, format!("expected field {name}, found \"{part}\"")))?;
    }
    if parts.next().is_some() {
        return Err(corrupt(key, "unexpected trailing fields"));
    }
    Ok(out)
}

fn num(key: &str, name: &str, s: &str) -> Result<i64> {
    // The encoder's form: an optional '-' then 1 to 18 digits (no '+', no
    // leading zeros check needed; up to 18 digits cannot overflow).
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .map_err(|_| corrupt(key, format!("field {name}=\"{s}\" is not an integer")));
    }
    let v = digits
        .bytes()
        .fold(0i64, |v, b| v * 10 + i64::from(b - b'0'));
    Ok(if digits.len() < s.len() { -v } else { v })
}

/// A sub-revision as written: only above 0, in plain decimal.
fn parse_sub(key: &str, s: &str) -> Result<u32> {
    match num(key, "sub", s) {
        Ok(n @ 1..=0xffff_ffff) if !s.starts_with(['0', '-']) => Ok(n as u32),
        _ => Err(corrupt(key, "bad sub-revision")),
    }
}

fn utf8<'a>(key: &str, v: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(v).map_err(|_| corrupt(key, "not UTF-8"))
}

/// A key record: the header line, then the value bytes.
fn decode_entry(key: &str, value: &[u8]) -> Result<Entry> {
    let nl = value
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| corrupt(key, "missing header line"))?;
    let header = utf8(key, &value[..nl])?;
    // " sub=<n>" ends the line when the change was not its revision's first.
    let (c, m, ver, lease, text, sub) = if header.split(' ').count() == 6 {
        let [c, m, ver, lease, text, sub] = fields(
            key,
            header,
            ["create", "mod", "version", "lease", "text", "sub"],
        )?;
        (c, m, ver, lease, text, parse_sub(key, sub)?)
    } else {
        let [c, m, ver, lease, text] =
            fields(key, header, ["create", "mod", "version", "lease", "text"])?;
        (c, m, ver, lease, text, 0)
    };
    let text = match text {
        "0" => false,
        "1" => true,
        _ => return Err(corrupt(key, "text must be 0 or 1")),
    };
    let entry = Entry {
        value: value[nl + 1..].into(),
        text,
        create_revision: num(key, "create", c)?,
        mod_revision: num(key, "mod", m)?,
        version: num(key, "version", ver)?,
        sub,
        lease: parse_hex_id(key, lease)?,
    };
    if entry.create_revision < 2
        || entry.mod_revision < entry.create_revision
        || entry.version < 1
        || entry.version > MAX_COUNTER
    {
        return Err(corrupt(key, "revisions or version out of range"));
    }
    if text && std::str::from_utf8(&entry.value).is_err() {
        return Err(corrupt(key, "text value is not UTF-8"));
    }
    Ok(entry)
}

/// Reads a store back an entry at a time (`add`), then checks the whole
/// (`finish`): a host can hand over a large store in pieces. Every entry
/// must be one this version wrote.
#[derive(Default)]
pub struct Decoder {
    snap: Snapshot,
    have_revision: bool,
}

impl Decoder {
    /// Decodes one stored entry.
    pub fn add(&mut self, key: &str, value: &[u8]) -> Result<()> {
        if key == REVISION_KEY {
            if self.have_revision {
                return Err(corrupt(key, "duplicate entry"));
            }
            self.snap.revision = num(key, "revision", utf8(key, value)?)?;
            if !(1..=MAX_COUNTER).contains(&self.snap.revision) {
                return Err(corrupt(key, "revision out of range"));
            }
            self.have_revision = true;
        } else if let Some(hex) = key.strip_prefix(LEASE_PREFIX) {
            let id = parse_hex_id(key, hex)?;
            if id == 0 {
                return Err(corrupt(key, "lease id 0 is reserved"));
            }
            let [ttl, deadline, remaining] =
                fields(key, utf8(key, value)?, ["ttl", "deadline", "remaining"])?;
            let deadline = match deadline {
                "none" => None,
                d => Some(num(key, "deadline", d)?),
            };
            let lease = StoredLease {
                ttl: num(key, "ttl", ttl)?,
                deadline,
                remaining: num(key, "remaining", remaining)?,
            };
            if lease.ttl < 1 || lease.ttl > MAX_LEASE_TTL || lease.remaining < 0 {
                return Err(corrupt(key, "ttl or remaining out of range"));
            }
            self.snap.leases.push((id, lease));
        } else if let Some(name) = key.strip_prefix(KEY_PREFIX) {
            let name = decode_key_name(key, name)?;
            self.snap.keys.push((name, decode_entry(key, value)?));
        } else if let Some(rest) = key.strip_prefix(OLD_PREFIX) {
            let (rev, name) = rest
                .split_once('/')
                .ok_or_else(|| corrupt(key, "missing revision"))?;
            let (rev, sub) = match rev.split_once('.') {
                None => (rev, 0),
                Some((rev, sub)) => (rev, parse_sub(key, sub)?),
            };
            let rev = parse_hex(key, "revision", rev)?;
            if !(2..=MAX_COUNTER).contains(&rev) {
                return Err(corrupt(key, "revision out of range"));
            }
            let name = decode_key_name(key, name)?;
            let entry = if value == TOMBSTONE {
                None
            } else {
                let e = decode_entry(key, value)?;
                if (e.mod_revision, e.sub) != (rev, sub) {
                    return Err(corrupt(key, "mod revision is not the record's revision"));
                }
                Some(e)
            };
            self.snap.old.push((rev, sub, name, entry));
        } else if key == COMPACTED_KEY {
            if self.snap.compacted_stored {
                return Err(corrupt(key, "duplicate entry"));
            }
            self.snap.compacted_stored = true;
            self.snap.compacted = num(key, "compacted", utf8(key, value)?)?;
            if !(-1..=MAX_COUNTER).contains(&self.snap.compacted) {
                return Err(corrupt(key, "compaction point out of range"));
            }
        } else if let Some(name) = key.strip_prefix(HOST_PREFIX) {
            if !valid_host_name(name) || value.len() > MAX_HOST_VALUE {
                return Err(corrupt(key, "host entry name or size out of range"));
            }
            if self.snap.host.len() >= MAX_HOST_ENTRIES {
                return Err(corrupt(key, "more host entries than the limit"));
            }
            self.snap.host.push((name.to_string(), value.to_vec()));
        } else {
            return Err(corrupt(key, "unknown entry (not written by edge-lease v1)"));
        }
        Ok(())
    }

    /// The snapshot, once every entry is in.
    pub fn finish(self) -> Result<Snapshot> {
        let Decoder {
            mut snap,
            have_revision,
        } = self;
        // Grants write no revision, but every key change does.
        let changed_keys = !snap.keys.is_empty() || !snap.old.is_empty();
        if !have_revision && changed_keys {
            return Err(corrupt(REVISION_KEY, "missing"));
        }
        if !have_revision {
            snap.revision = 1;
        }
        if snap.compacted > snap.revision {
            return Err(corrupt(
                COMPACTED_KEY,
                "compaction point is above the stored revision",
            ));
        }
        for (rev, sub, name, _) in &snap.old {
            if *rev > snap.revision {
                return Err(corrupt(
                    &old_key(*rev, *sub, name),
                    "revision is above the stored revision",
                ));
            }
        }
        Ok(snap)
    }
}

/// Reads a whole store back (`Decoder`).
pub fn decode<K: AsRef<str>, V: AsRef<[u8]>>(
    entries: impl IntoIterator<Item = (K, V)>,
) -> Result<Snapshot> {
    let mut d = Decoder::default();
    for (k, v) in entries {
        d.add(k.as_ref(), v.as_ref())?;
    }
    d.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
