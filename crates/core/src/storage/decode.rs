//! Reading a store back: its entries, in any order, decoded into what
//! restore rebuilds the lessor from, each checked against the layout
//! (`codec.rs`) so that a bad entry is named rather than guessed at.

use super::codec::{
    old_key, plain, valid_host_name, StoredLease, COMPACTED_KEY, HOST_PREFIX, KEY_PREFIX,
    LEASE_PREFIX, MAX_COUNTER, OLD_PREFIX, REVISION_KEY, TOMBSTONE,
};
use crate::error::{Error, Result};
use crate::text::Text;
use crate::types::{Entry, Key, LeaseId, MAX_HOST_ENTRIES, MAX_HOST_VALUE, MAX_LEASE_TTL};

/// Everything decoded from a store.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub revision: i64,
    pub leases: Vec<(LeaseId, StoredLease)>,
    pub keys: Vec<(Key, Entry)>,
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

fn corrupt(key: &str, reason: impl Into<String>) -> Error {
    Error::CorruptEntry {
        key: String::from(key),
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
        let why = Text::new(what)
            .s(" \"")
            .s(s)
            .s("\" is not 16 lowercase hex digits");
        return Err(corrupt(key, why));
    }
    Ok(v as i64)
}

/// A live key's name: as it is when no byte is escaped (most names), one
/// allocation; else through `decode_key_name`.
fn decode_live_name(key: &str, s: &str) -> Result<Key> {
    let b = s.as_bytes();
    if !b.is_empty() && b.iter().all(|&c| plain(c)) {
        return Ok(Key::from(b));
    }
    decode_key_name(key, s).map(Key::from)
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
/// (Of any length, not generic over it: one copy in the wasm.)
fn fields<'a, const N: usize>(key: &str, text: &'a str, names: [&str; N]) -> Result<[&'a str; N]> {
    let mut out = [""; N];
    fields_into(key, text, &names, &mut out)?;
    Ok(out)
}

fn fields_into<'a>(key: &str, text: &'a str, names: &[&str], out: &mut [&'a str]) -> Result<()> {
    let mut parts = text.split(' ');
    for (i, name) in names.iter().enumerate() {
        let part = parts
            .next()
            .ok_or_else(|| corrupt(key, Text::new("missing field ").s(name)))?;
        out[i] = part
            .strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .ok_or_else(|| {
                let why = Text::new("expected field ").s(name).s(", found \"");
                corrupt(key, why.s(part).s("\""))
            })?;
    }
    if parts.next().is_some() {
        return Err(corrupt(key, "unexpected trailing fields"));
    }
    Ok(())
}

fn num(key: &str, name: &str, s: &str) -> Result<i64> {
    // The encoder's form: an optional '-' then 1 to 18 digits (no '+', no
    // leading zeros check needed; up to 18 digits cannot overflow).
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<i64>().map_err(|_| {
            let why = Text::new("field ").s(name).s("=\"").s(s);
            corrupt(key, why.s("\" is not an integer"))
        });
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

/// The encoder's exact form read byte by byte: the common case of a
/// restore, one pass and no splitting (text parsing was half of a
/// restore's time). Anything else (None) goes to the field-by-field
/// reader, which accepts the same and names what is wrong.
struct Scan<'a>(&'a [u8]);

impl Scan<'_> {
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.0 = self.0.strip_prefix(s)?;
        Some(())
    }

    /// An optional '-' then 1 to 18 digits, as `num` reads them.
    fn dec(&mut self) -> Option<i64> {
        let neg = self.0.first() == Some(&b'-');
        let b = &self.0[usize::from(neg)..];
        let n = b.iter().take(19).take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 18 {
            return None;
        }
        let v = b[..n]
            .iter()
            .fold(0i64, |v, c| v * 10 + i64::from(c - b'0'));
        self.0 = &b[n..];
        Some(if neg { -v } else { v })
    }

    /// 16 lowercase hex digits.
    fn hex16(&mut self) -> Option<u64> {
        let (digits, rest) = self.0.split_first_chunk::<16>()?;
        let mut v = 0u64;
        for &c in digits {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return None,
            };
            v = v << 4 | u64::from(d);
        }
        self.0 = rest;
        Some(v)
    }
}

/// A lease record in the encoder's form: (ttl, deadline, remaining).
pub(super) fn lease_fast(value: &[u8]) -> Option<(i64, Option<i64>, i64)> {
    let mut s = Scan(value);
    s.lit(b"ttl=")?;
    let ttl = s.dec()?;
    s.lit(b" deadline=")?;
    let deadline = if s.lit(b"none").is_some() {
        None
    } else {
        Some(s.dec()?)
    };
    s.lit(b" remaining=")?;
    let remaining = s.dec()?;
    s.0.is_empty().then_some((ttl, deadline, remaining))
}

/// A key record's header line in the encoder's form: (create, mod,
/// version, lease, text, sub).
pub(super) type Header = (i64, i64, i64, LeaseId, bool, u32);

pub(super) fn header_fast(h: &[u8]) -> Option<Header> {
    let mut s = Scan(h);
    s.lit(b"create=")?;
    let c = s.dec()?;
    s.lit(b" mod=")?;
    let m = s.dec()?;
    s.lit(b" version=")?;
    let ver = s.dec()?;
    s.lit(b" lease=")?;
    let lease = s.hex16()? as i64;
    s.lit(b" text=")?;
    let text = match s.0.split_first()? {
        (b'0', rest) => (false, rest),
        (b'1', rest) => (true, rest),
        _ => return None,
    };
    s.0 = text.1;
    let sub = if s.0.is_empty() {
        0
    } else {
        s.lit(b" sub=")?;
        // As `parse_sub` takes it: above 0, no leading zero or sign.
        if !matches!(s.0.first(), Some(b'1'..=b'9')) {
            return None;
        }
        let n = s.dec()?;
        if !s.0.is_empty() {
            return None;
        }
        u32::try_from(n).ok()?
    };
    Some((c, m, ver, lease, text.0, sub))
}

/// A key record's header line, field by field (`header_fast` reads the
/// encoder's form; this names what is wrong with anything else).
pub(super) fn header_fields(key: &str, header: &[u8]) -> Result<Header> {
    let header = utf8(key, header)?;
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
    Ok((
        num(key, "create", c)?,
        num(key, "mod", m)?,
        num(key, "version", ver)?,
        parse_hex_id(key, lease)?,
        text,
        sub,
    ))
}

/// A key record: the header line, then the value bytes.
fn decode_entry(key: &str, value: &[u8]) -> Result<Entry> {
    let nl = value
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| corrupt(key, "missing header line"))?;
    let (create, m, version, lease, text, sub) = match header_fast(&value[..nl]) {
        Some(h) => h,
        None => header_fields(key, &value[..nl])?,
    };
    let entry = Entry {
        value: value[nl + 1..].into(),
        text,
        create_revision: create,
        mod_revision: m,
        version,
        sub,
        lease,
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

/// A lease record, field by field (`lease_fast` reads the encoder's form).
pub(super) fn lease_fields(key: &str, value: &[u8]) -> Result<StoredLease> {
    let [ttl, deadline, remaining] =
        fields(key, utf8(key, value)?, ["ttl", "deadline", "remaining"])?;
    let deadline = match deadline {
        "none" => None,
        d => Some(num(key, "deadline", d)?),
    };
    Ok(StoredLease {
        ttl: num(key, "ttl", ttl)?,
        deadline,
        remaining: num(key, "remaining", remaining)?,
    })
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
            let lease = match lease_fast(value) {
                Some((ttl, deadline, remaining)) => StoredLease {
                    ttl,
                    deadline,
                    remaining,
                },
                None => lease_fields(key, value)?,
            };
            if lease.ttl < 1 || lease.ttl > MAX_LEASE_TTL || lease.remaining < 0 {
                return Err(corrupt(key, "ttl or remaining out of range"));
            }
            self.snap.leases.push((id, lease));
        } else if let Some(name) = key.strip_prefix(KEY_PREFIX) {
            let name = decode_live_name(key, name)?;
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
