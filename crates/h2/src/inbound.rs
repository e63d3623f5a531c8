//! The client's bytes on their way to h2, with each request's header block
//! decoded and written anew.
//!
//! Why: grpc-go (etcd 3.4's clientv3, so `etcdctl endpoint status`) can send
//! a whole URL as `:authority` ("http://127.0.0.1:2379"). etcd's Go server
//! takes it; h2 resets the stream with PROTOCOL_ERROR and will not be relaxed
//! (hyperium/h2#525). Here such an authority becomes its host and port.
//!
//! Every block is re-encoded as literals without indexing, so h2's HPACK
//! table stays empty and only this decoder (hpack.rs) follows the client's.
//! Other frames pass through untouched.

use crate::hpack::{Decoder, Invalid};
use bytes::{Buf, BufMut, BytesMut};

const PREFACE_LEN: usize = 24;
const HEADER_LEN: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// h2's SETTINGS_MAX_FRAME_SIZE (the default): the largest frame it takes.
const MAX_FRAME: usize = 16_384;
/// h2's SETTINGS_HEADER_TABLE_SIZE (the default): the client's table may not exceed it.
const TABLE_SIZE: usize = 4_096;
/// A header block larger than this, encoded or decoded (name + value + 32
/// per field, as HPACK counts), ends the connection.
const MAX_BLOCK: usize = 256 * 1024;
/// CONTINUATION frames one block may take (empty ones would grow nothing).
const MAX_CONTINUATIONS: usize = 64;

/// Why the connection must end: its frames break HTTP/2 (PROTOCOL_ERROR)
/// or a header block cannot be decoded or is too large (COMPRESSION_ERROR).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Broken {
    Protocol,
    Compression,
}

pub struct Inbound {
    buf: BytesMut,
    preface: bool,
    decoder: Decoder,
    /// A HEADERS frame whose block goes on in CONTINUATION frames.
    open: Option<Block>,
}

struct Block {
    stream: u32,
    continuations: usize,
    end_stream: bool,
    priority: Option<[u8; 5]>,
    fragment: Vec<u8>,
}

impl Default for Inbound {
    fn default() -> Self {
        let decoder = Decoder::new(TABLE_SIZE);
        Inbound {
            buf: BytesMut::new(),
            preface: false,
            decoder,
            open: None,
        }
    }
}

impl Inbound {
    /// Takes the client's `input`; appends to `out` what h2 is to read.
    pub fn feed(&mut self, input: &[u8], out: &mut BytesMut) -> Result<(), Broken> {
        self.buf.extend_from_slice(input);
        if !self.preface {
            if self.buf.len() < PREFACE_LEN {
                return Ok(());
            }
            out.extend_from_slice(&self.buf.split_to(PREFACE_LEN));
            self.preface = true;
        }
        while self.buf.len() >= HEADER_LEN {
            let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
            let (kind, flags) = (self.buf[3], self.buf[4]);
            let stream = u32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]])
                & 0x7fff_ffff;
            if len > MAX_FRAME {
                return Err(Broken::Protocol);
            }
            if self.buf.len() < HEADER_LEN + len {
                return Ok(());
            }
            let frame = self.buf.split_to(HEADER_LEN + len);
            let payload = &frame[HEADER_LEN..];
            match (kind, &mut self.open) {
                (CONTINUATION, Some(block)) if block.stream == stream => {
                    block.fragment.extend_from_slice(payload);
                    block.continuations += 1;
                    if block.fragment.len() > MAX_BLOCK || block.continuations > MAX_CONTINUATIONS {
                        return Err(Broken::Compression);
                    }
                }
                // A block's frames must follow one another (RFC 9113 6.10).
                (_, Some(_)) | (CONTINUATION, None) => return Err(Broken::Protocol),
                (HEADERS, None) => self.open = Some(headers_frame(stream, flags, payload)?),
                _ => {
                    out.extend_from_slice(&frame);
                    continue;
                }
            }
            if flags & END_HEADERS != 0 {
                let block = self.open.take().expect("a block is open");
                self.rewrite(&block, out)?;
            }
        }
        Ok(())
    }

    fn rewrite(&mut self, block: &Block, out: &mut BytesMut) -> Result<(), Broken> {
        let mut encoded = Vec::with_capacity(block.fragment.len() + 64);
        let mut size = 0;
        self.decoder
            .decode(&block.fragment, |name, value| {
                size += name.len() + value.len() + 32;
                if size > MAX_BLOCK {
                    return Err(Invalid);
                }
                if name == b":authority" {
                    if let Some(authority) = authority(value) {
                        literal(&mut encoded, name, authority);
                    }
                } else {
                    literal(&mut encoded, name, value);
                }
                Ok(())
            })
            .map_err(|_| Broken::Compression)?;
        let mut rest = &encoded[..];
        let mut first = true;
        loop {
            let room = if first && block.priority.is_some() {
                MAX_FRAME - 5
            } else {
                MAX_FRAME
            };
            let (chunk, after) = rest.split_at(rest.len().min(room));
            let last = after.is_empty();
            let mut flags = if last { END_HEADERS } else { 0 };
            let mut len = chunk.len();
            if first {
                flags |= if block.end_stream { END_STREAM } else { 0 };
                if block.priority.is_some() {
                    flags |= PRIORITY;
                    len += 5;
                }
            }
            out.put_uint(len as u64, 3);
            out.put_u8(if first { HEADERS } else { CONTINUATION });
            out.put_u8(flags);
            out.put_u32(block.stream);
            if let (true, Some(p)) = (first, block.priority) {
                out.extend_from_slice(&p);
            }
            out.extend_from_slice(chunk);
            if last {
                return Ok(());
            }
            first = false;
            rest = after;
        }
    }
}

fn headers_frame(stream: u32, flags: u8, payload: &[u8]) -> Result<Block, Broken> {
    let mut p = payload;
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = *p.first().ok_or(Broken::Protocol)? as usize;
        p.advance(1);
    }
    let mut priority = None;
    if flags & PRIORITY != 0 {
        priority = Some(
            p.get(..5)
                .ok_or(Broken::Protocol)?
                .try_into()
                .map_err(|_| Broken::Protocol)?,
        );
        p.advance(5);
    }
    let fragment = p
        .get(..p.len().checked_sub(pad).ok_or(Broken::Protocol)?)
        .ok_or(Broken::Protocol)?
        .to_vec();
    Ok(Block {
        stream,
        continuations: 0,
        end_stream: flags & END_STREAM != 0,
        priority,
        fragment,
    })
}

/// The authority h2 is given for `value`: as it is when valid, else the host
/// and port of a URL, else none (gRPC does not need it).
fn authority(value: &[u8]) -> Option<&[u8]> {
    if http::uri::Authority::try_from(value).is_ok() {
        return Some(value);
    }
    let s = std::str::from_utf8(value).ok()?;
    let rest = s.split_once("://").map_or(s, |(_, r)| r);
    let host = rest.split('/').next()?;
    http::uri::Authority::try_from(host)
        .ok()
        .map(|_| host.as_bytes())
}

/// An HPACK "literal header field without indexing, new name", no Huffman.
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    string(out, name);
    string(out, value);
}

fn string(out: &mut Vec<u8>, s: &[u8]) {
    // The length as an HPACK integer with a 7-bit prefix (H = 0).
    let mut n = s.len();
    if n < 127 {
        out.push(n as u8);
    } else {
        out.push(127);
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
    }
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_as_authority_becomes_its_host_and_port() {
        assert_eq!(authority(b"127.0.0.1:2379"), Some(&b"127.0.0.1:2379"[..]));
        assert_eq!(
            authority(b"http://127.0.0.1:2379"),
            Some(&b"127.0.0.1:2379"[..])
        );
        assert_eq!(authority(b"http://[::1]:2379/x"), Some(&b"[::1]:2379"[..]));
        assert_eq!(authority(b"/var/run/etcd.sock"), None);
    }

    #[test]
    fn long_strings_get_multi_byte_lengths() {
        let mut out = Vec::new();
        string(&mut out, &[b'a'; 300]);
        // 300 = 127 + 173; 173 = 0x2d + 128
        assert_eq!(&out[..3], &[127, 0xad, 0x01]);
    }

    #[test]
    fn frames_of_a_block_must_be_contiguous() {
        let mut inb = Inbound::default();
        let mut out = BytesMut::new();
        let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // HEADERS on stream 1 without END_HEADERS, then a DATA frame.
        input.extend_from_slice(&[0, 0, 1, HEADERS, 0, 0, 0, 0, 1, 0x82]);
        input.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(inb.feed(&input, &mut out), Err(Broken::Protocol));
    }
}
