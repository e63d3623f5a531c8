//! Reading a store back: its entries, in any order, decoded into what
//! restore rebuilds the lessor from, each checked against the layout
//! (`codec.rs`) so that a bad entry is named rather than guessed at.

use super::binary;
use super::codec::{
    corrupt, old_key, plain, valid_host_name, Header, StoredLease, BINARY, COMPACTED_KEY,
    HOST_PREFIX, KEY_PREFIX, LEASE_PREFIX, MAX_COUNTER, OLD_PREFIX, REVISION_KEY, TOMBSTONE,
};
use crate::error::Result;
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

fn parse_hex_id(key: &str, s: &str) -> Result<LeaseId> {
    parse_hex(key, "lease id", s)
}

/// Each byte's value as a lowercase hex digit, 16 for any other byte.
const HEX_DIGIT: [u8; 256] = {
    let mut t = [16u8; 256];
    let mut i = 0;
    while i < 16 {
        t[b"0123456789abcdef"[i] as usize] = i as u8;
        i += 1;
    }
    t
};

fn parse_hex(key: &str, what: &str, s: &str) -> Result<i64> {
    // Only the form the encoder writes: one number, one name.
    let mut v = 0u64;
    let mut bad = s.len() != 16;
    for b in s.bytes() {
        let d = HEX_DIGIT[usize::from(b)];
        bad |= d == 16;
        v = v << 4 | u64::from(d & 15);
    }
    if bad {
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

/// `name=value` fields separated by single spaces, read in a fixed order,
/// each as it comes (no split of the whole text first: reading the records
/// was half of a restore's time).
struct Fields<'a> {
    key: &'a str,
    /// What is left to read; None once the last field is read.
    rest: Option<&'a str>,
}

impl<'a> Fields<'a> {
    fn new(key: &'a str, text: &'a str) -> Fields<'a> {
        Fields {
            key,
            rest: Some(text),
        }
    }

    fn next(&mut self, name: &str) -> Result<&'a str> {
        let text = self
            .rest
            .ok_or_else(|| corrupt(self.key, Text::new("missing field ").s(name)))?;
        let (part, rest) = match text.split_once(' ') {
            Some((part, rest)) => (part, Some(rest)),
            None => (text, None),
        };
        self.rest = rest;
        part.strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .ok_or_else(|| {
                let why = Text::new("expected field ").s(name).s(", found \"");
                corrupt(self.key, why.s(part).s("\""))
            })
    }

    fn num(&mut self, name: &str) -> Result<i64> {
        let v = self.next(name)?;
        num(self.key, name, v)
    }

    fn end(&self) -> Result<()> {
        match self.rest {
            Some(_) => Err(corrupt(self.key, "unexpected trailing fields")),
            None => Ok(()),
        }
    }
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

/// A key record's header line in the text layout (" sub=<n>" ends it when
/// the change was not its revision's first).
pub(super) fn header_fields(key: &str, header: &[u8]) -> Result<Header> {
    let mut f = Fields::new(key, utf8(key, header)?);
    let c = f.num("create")?;
    let m = f.num("mod")?;
    let ver = f.num("version")?;
    let lease = parse_hex_id(key, f.next("lease")?)?;
    let text = match f.next("text")? {
        "0" => false,
        "1" => true,
        _ => return Err(corrupt(key, "text must be 0 or 1")),
    };
    let sub = match f.rest {
        Some(_) => parse_sub(key, f.next("sub")?)?,
        None => 0,
    };
    f.end()?;
    Ok((c, m, ver, lease, text, sub))
}

/// A key record: binary, or a text header line, then the value bytes.
fn decode_entry(key: &str, value: &[u8]) -> Result<Entry> {
    let ((create, m, version, lease, text, sub), bytes) = if value.first() == Some(&BINARY) {
        binary::entry(key, value)?
    } else {
        let nl = value
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| corrupt(key, "missing header line"))?;
        (header_fields(key, &value[..nl])?, &value[nl + 1..])
    };
    let entry = Entry {
        value: bytes.into(),
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

/// A lease record, binary or text.
pub(super) fn lease_fields(key: &str, value: &[u8]) -> Result<StoredLease> {
    if value.first() == Some(&BINARY) {
        return binary::lease(key, value);
    }
    let mut f = Fields::new(key, utf8(key, value)?);
    let ttl = f.num("ttl")?;
    let deadline = match f.next("deadline")? {
        "none" => None,
        d => Some(num(key, "deadline", d)?),
    };
    let remaining = f.num("remaining")?;
    f.end()?;
    Ok(StoredLease {
        ttl,
        deadline,
        remaining,
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
            let lease = lease_fields(key, value)?;
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
