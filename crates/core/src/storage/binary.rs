//! Reading the binary lease and key records (`codec.rs`'s layout): only
//! what the encoder writes, so that a bad record is named, not guessed at.

use super::codec::{corrupt, Header, StoredLease, BINARY};
use crate::error::Result;

/// A record's fields, read in order.
struct Binary<'k, 'v> {
    key: &'k str,
    rest: &'v [u8],
}

impl<'k, 'v> Binary<'k, 'v> {
    /// After the BINARY byte; its flags byte, whose one flag (bit 0) it
    /// gives.
    fn new(key: &'k str, value: &'v [u8]) -> Result<(Binary<'k, 'v>, bool)> {
        match value {
            [BINARY, f @ (0 | 1), rest @ ..] => Ok((Binary { key, rest }, *f == 1)),
            [BINARY, _, ..] => Err(corrupt(key, "unknown flags")),
            _ => Err(corrupt(key, "truncated record")),
        }
    }

    /// A varint in its shortest form, at most 64 bits.
    fn num(&mut self) -> Result<i64> {
        let mut v = 0u64;
        for (i, &b) in self.rest.iter().enumerate().take(10) {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                // (A last byte of 0 is a longer form of a shorter number;
                // the tenth holds only the 64th bit.)
                if (b == 0 && i > 0) || (i == 9 && b > 1) {
                    break;
                }
                self.rest = &self.rest[i + 1..];
                return Ok(v as i64);
            }
        }
        Err(corrupt(self.key, "bad or truncated number"))
    }
}

/// A key record's fields and its value bytes.
pub(super) fn entry<'a>(key: &str, value: &'a [u8]) -> Result<(Header, &'a [u8])> {
    let (mut b, text) = Binary::new(key, value)?;
    let (create, m, version, lease) = (b.num()?, b.num()?, b.num()?, b.num()?);
    let sub = u32::try_from(b.num()?).map_err(|_| corrupt(key, "bad sub-revision"))?;
    Ok(((create, m, version, lease, text, sub), b.rest))
}

/// A lease record: ttl, the deadline if it has one, remaining ms.
pub(super) fn lease(key: &str, value: &[u8]) -> Result<StoredLease> {
    let (mut b, has_deadline) = Binary::new(key, value)?;
    let ttl = b.num()?;
    let deadline = if has_deadline { Some(b.num()?) } else { None };
    let remaining = b.num()?;
    if !b.rest.is_empty() {
        return Err(corrupt(key, "unexpected trailing bytes"));
    }
    Ok(StoredLease {
        ttl,
        deadline,
        remaining,
    })
}
