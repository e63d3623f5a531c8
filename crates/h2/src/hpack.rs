//! An HPACK decoder (RFC 7541) for inbound.rs: it follows the client's
//! dynamic table and hands out each field. Huffman strings are decoded by
//! `httlib-huffman` (flattened tables, 5 bits a step); the rest is the
//! format's integers, strings and two tables.
//!
//! Not loona-hpack's decoder: it builds a Huffman lookup map for every
//! string, which was a fifth of the server's CPU per call.

use httlib_huffman::encoder::table::ENCODE_TABLE;
use std::collections::VecDeque;

/// The field block cannot be decoded: a COMPRESSION_ERROR for the connection.
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid;

/// The static table (RFC 7541 Appendix A), index 1 first.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Each entry's size counts its name, its value and this (RFC 7541 4.1).
const ENTRY_OVERHEAD: usize = 32;

pub struct Decoder {
    /// Newest first: dynamic index 62 is the front.
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    /// The size the client last set (at most `allowed`).
    max: usize,
    /// SETTINGS_HEADER_TABLE_SIZE as this side advertised it.
    allowed: usize,
}

impl Decoder {
    pub fn new(allowed: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max: allowed,
            allowed,
        }
    }

    /// Decodes one whole field block, calling `field(name, value)` in order;
    /// an error from `field` stops it (a block that decodes too large must
    /// not be decoded to its end: references to one table entry multiply).
    pub fn decode(
        &mut self,
        mut block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]) -> Result<(), Invalid>,
    ) -> Result<(), Invalid> {
        let mut first = true;
        while let Some(&b) = block.first() {
            if b & 0x80 != 0 {
                let index = integer(&mut block, 7)?;
                let (name, value) = self.get(index)?;
                field(name, value)?;
            } else if b & 0xe0 == 0x20 {
                // A table size update, allowed only before the first field.
                let size = integer(&mut block, 5)?;
                if !first || size > self.allowed {
                    return Err(Invalid);
                }
                self.max = size;
                self.evict(0);
                continue;
            } else {
                let (prefix, indexing) = if b & 0x40 != 0 { (6, true) } else { (4, false) };
                let index = integer(&mut block, prefix)?;
                let name = if index == 0 {
                    string(&mut block)?
                } else {
                    self.get(index)?.0.to_vec()
                };
                let value = string(&mut block)?;
                field(&name, &value)?;
                if indexing {
                    self.insert(name, value);
                }
            }
            first = false;
        }
        Ok(())
    }

    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), Invalid> {
        match index {
            0 => Err(Invalid),
            1..=61 => {
                let (n, v) = STATIC[index - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(index - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(Invalid),
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        // An entry larger than the table empties it and is not kept (4.4).
        self.evict(size);
        if size <= self.max {
            self.size += size;
            self.table.push_front((name, value));
        }
    }

    /// Evicts the oldest entries until `room` more bytes fit (or none are left).
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + ENTRY_OVERHEAD;
        }
    }
}

/// An HPACK integer with a `prefix`-bit prefix (5.1), consumed from `buf`.
fn integer(buf: &mut &[u8], prefix: u8) -> Result<usize, Invalid> {
    let (&first, mut rest) = buf.split_first().ok_or(Invalid)?;
    let mask = (1u16 << prefix) as usize - 1;
    let mut value = first as usize & mask;
    if value == mask {
        let mut shift = 0;
        loop {
            let (&b, r) = rest.split_first().ok_or(Invalid)?;
            rest = r;
            // No field or table needs more than 2^28: longer is an attack.
            if shift > 21 {
                return Err(Invalid);
            }
            value += ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    *buf = rest;
    Ok(value)
}

/// An HPACK string (5.2), consumed from `buf`.
fn string(buf: &mut &[u8]) -> Result<Vec<u8>, Invalid> {
    let huffman = buf.first().ok_or(Invalid)? & 0x80 != 0;
    let len = integer(buf, 7)?;
    let raw = buf.get(..len).ok_or(Invalid)?;
    *buf = &buf[len..];
    if !huffman {
        return Ok(raw.to_vec());
    }
    let mut out = Vec::with_capacity(len * 8 / 5);
    httlib_huffman::decode(raw, &mut out, httlib_huffman::DecoderSpeed::FiveBits)
        .map_err(|_| Invalid)?;
    // The padding must be under 8 bits and all ones, the start of EOS
    // (5.2); the decoder takes zero bits too.
    let bits: usize = out
        .iter()
        .map(|&b| ENCODE_TABLE[b as usize].0 as usize)
        .sum();
    let pad = (raw.len() * 8).checked_sub(bits).ok_or(Invalid)?;
    if pad >= 8 {
        return Err(Invalid);
    }
    let ones = (1u8 << pad) - 1;
    if raw.last().is_some_and(|&b| b & ones != ones) {
        return Err(Invalid);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference encoder for the differential test: random representations
    /// (indexed, literal with or without indexing, never indexed; names by
    /// index or literal; Huffman or not; table size updates), tracking its
    /// own copy of the table.
    struct Encoder {
        table: VecDeque<(Vec<u8>, Vec<u8>)>,
        size: usize,
        max: usize,
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn int(out: &mut Vec<u8>, flags: u8, prefix: u8, mut v: usize) {
        let mask = (1usize << prefix) - 1;
        if v < mask {
            out.push(flags | v as u8);
            return;
        }
        out.push(flags | mask as u8);
        v -= mask;
        while v >= 128 {
            out.push((v % 128) as u8 | 0x80);
            v /= 128;
        }
        out.push(v as u8);
    }

    fn str(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
        if huffman {
            let mut h = Vec::new();
            httlib_huffman::encode(s, &mut h).unwrap();
            int(out, 0x80, 7, h.len());
            out.extend_from_slice(&h);
        } else {
            int(out, 0, 7, s.len());
            out.extend_from_slice(s);
        }
    }

    impl Encoder {
        fn add(&mut self, n: &[u8], v: &[u8]) {
            let size = n.len() + v.len() + 32;
            while self.size + size > self.max {
                let Some((a, b)) = self.table.pop_back() else {
                    break;
                };
                self.size -= a.len() + b.len() + 32;
            }
            if size <= self.max {
                self.size += size;
                self.table.push_front((n.to_vec(), v.to_vec()));
            }
        }

        fn block(&mut self, rng: &mut Rng, fields: &mut Vec<(Vec<u8>, Vec<u8>)>) -> Vec<u8> {
            let mut out = Vec::new();
            if rng.next(8) == 0 {
                self.max = [0, 64, 200, 4096][rng.next(4)];
                int(&mut out, 0x20, 5, self.max);
                while self.size > self.max {
                    let (a, b) = self.table.pop_back().unwrap();
                    self.size -= a.len() + b.len() + 32;
                }
            }
            let names: [&[u8]; 6] = [
                b":authority",
                b":path",
                b"grpc-timeout",
                b"content-type",
                b"te",
                b"x-custom-\xff",
            ];
            // At least one field: loona-hpack refuses a block of only a size update.
            for _ in 0..1 + rng.next(8) {
                let dynamic = self.table.len();
                match rng.next(4) {
                    0 if dynamic > 0 || rng.next(2) == 0 => {
                        let i = if dynamic > 0 && rng.next(2) == 0 {
                            62 + rng.next(dynamic)
                        } else {
                            1 + rng.next(61)
                        };
                        int(&mut out, 0x80, 7, i);
                        let (n, v) = if i <= 61 {
                            (
                                STATIC[i - 1].0.as_bytes().to_vec(),
                                STATIC[i - 1].1.as_bytes().to_vec(),
                            )
                        } else {
                            self.table[i - 62].clone()
                        };
                        fields.push((n, v));
                    }
                    kind => {
                        let value: Vec<u8> = (0..rng.next(300))
                            .map(|_| [b'a', b'7', b'/', b':', 0xfe, b' '][rng.next(6)])
                            .collect();
                        let (flags, prefix) = [(0x40, 6), (0x00, 4), (0x10, 4)][kind % 3];
                        let name = if rng.next(2) == 0 {
                            int(&mut out, flags, prefix, 0);
                            let n = names[rng.next(names.len())].to_vec();
                            str(&mut out, &n, rng.next(2) == 0);
                            n
                        } else {
                            let i = 1 + rng.next(61);
                            int(&mut out, flags, prefix, i);
                            STATIC[i - 1].0.as_bytes().to_vec()
                        };
                        str(&mut out, &value, rng.next(2) == 0);
                        if flags == 0x40 {
                            self.add(&name, &value);
                        }
                        fields.push((name, value));
                    }
                }
            }
            out
        }
    }

    #[test]
    fn decodes_what_a_reference_encoder_wrote_and_agrees_with_loona() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut enc = Encoder {
            table: VecDeque::new(),
            size: 0,
            max: 4096,
        };
        let mut ours = Decoder::new(4096);
        let mut loona = loona_hpack::Decoder::new();
        for round in 0..2000 {
            let mut want = Vec::new();
            let block = enc.block(&mut rng, &mut want);
            let mut got = Vec::new();
            ours.decode(&block, |n, v| {
                got.push((n.to_vec(), v.to_vec()));
                Ok(())
            })
            .unwrap();
            assert_eq!(got, want, "round {round}");
            let theirs = loona.decode(&block).unwrap();
            assert_eq!(got, theirs, "round {round}: loona-hpack differs");
            assert_eq!(ours.size, enc.size, "round {round}: table size");
        }
    }

    #[test]
    fn refuses_bad_blocks_without_panicking() {
        let mut d = Decoder::new(4096);
        for bad in [
            &[0x80][..],                           // index 0
            &[0xbe],                               // dynamic index 62, table empty
            &[0x40, 0x05, b'a'],                   // name longer than the block
            &[0x1f],                               // integer cut short
            &[0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f], // integer too large
            &[0x3f, 0xe2, 0x1f],                   // table size 4097, above the allowed 4096
            &[0x82, 0x20],                         // size update after a field
            &[0x00, 0x81, 0xff, 0x00],             // Huffman string with an EOS code
        ] {
            assert_eq!(d.decode(bad, |_, _| Ok(())), Err(Invalid), "{bad:?}");
        }
        // Random bytes: errors or fields, never a panic.
        let mut rng = Rng(7);
        for _ in 0..20_000 {
            let bytes: Vec<u8> = (0..rng.next(40)).map(|_| rng.next(256) as u8).collect();
            let _ = Decoder::new(4096).decode(&bytes, |_, _| Ok(()));
        }
    }
}
