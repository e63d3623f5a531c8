//! The stored layout: how leases, keys and the revision are written as
//! store entries (read back by `decode.rs`). Record names are ASCII; values
//! are bytes:
//!
//! | key | value |
//! | --- | --- |
//! | `v1/revision` | the store revision, decimal |
//! | `v1/lease/<16 hex digits>` | a lease record (below) |
//! | `v1/key/<percent-encoded key>` | a key record (below) |
//! | `v1/old/<16 hex revision>[.<sub>]/<percent-encoded key>` | a superseded version of the key from that revision on: a key record, or `deleted` |
//! | `v1/compacted` | the compaction point: history before it is gone, decimal (-1: never compacted) |
//! | `v1/host/<name>` | an entry the host keeps beside the lessor's state (the server's alarms): its bytes |
//!
//! `sub` is the change's sub-revision, its place among its revision's
//! changes, written only when above 0 (older stores have none: 0).
//!
//! Lease and key records are binary: the byte [`BINARY`], then each number
//! as the LEB128 varint of its 64-bit two's complement (the shortest form):
//! - lease: a flags byte (1: it has a deadline), ttl, the deadline if it
//!   has one, the checkpointed remaining ms;
//! - key: a flags byte (1: the value is text), create revision, mod
//!   revision, version, lease (0: none), sub-revision, then the value bytes.
//!
//! Earlier releases wrote them as text, which is still read (a text record
//! starts with a letter, never with [`BINARY`]): a lease as `ttl=<s>
//! deadline=<epoch ms or none> remaining=<ms>`, a key as `create=<rev>
//! mod=<rev> version=<n> lease=<16 hex> text=<0/1>[ sub=<n>]`, a newline,
//! then the value bytes. A store may hold both: records are rewritten in
//! this layout as they change, and all of them at a compaction.
//!
//! A lease's keys are not listed in its record: they are found from the keys'
//! own lease fields on restore, as etcd recovers its item sets.

use crate::error::Error;
use crate::text::{push_dec, push_escape, push_hex16, push_udec};
use crate::types::{Entry, LeaseId, MAX_HOST_NAME};

pub const REVISION_KEY: &str = "v1/revision";
/// Revisions and versions stay within what JS numbers hold exactly (2^53),
/// so counting up from a stored value can never overflow.
pub(super) const MAX_COUNTER: i64 = 1 << 53;
pub(super) const LEASE_PREFIX: &str = "v1/lease/";
pub(super) const KEY_PREFIX: &str = "v1/key/";
pub(super) const OLD_PREFIX: &str = "v1/old/";
pub const COMPACTED_KEY: &str = "v1/compacted";
pub(super) const HOST_PREFIX: &str = "v1/host/";
pub(super) const TOMBSTONE: &[u8] = b"deleted";
/// The first byte of a lease or key record in the binary layout.
pub const BINARY: u8 = 0x01;

/// `v` as an unsigned LEB128 varint of its two's complement: 1 byte up to
/// 127, 10 for a negative number.
fn push_varint(out: &mut Vec<u8>, v: i64) {
    let mut v = v as u64;
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// What a key record holds beside its value: (create, mod, version, lease,
/// text, sub-revision).
pub(super) type Header = (i64, i64, i64, LeaseId, bool, u32);

/// A stored entry that is not in this layout, named by its key.
pub(super) fn corrupt(key: &str, reason: impl Into<String>) -> Error {
    Error::CorruptEntry {
        key: String::from(key),
        reason: reason.into(),
    }
}

/// What a lease record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredLease {
    pub ttl: i64,
    /// None while the lease had no deadline (a standby lessor).
    pub deadline: Option<i64>,
    /// Checkpointed remaining time in ms, 0 if none.
    pub remaining: i64,
}

/// Whether `name` may name a host entry: 1 to [`MAX_HOST_NAME`] of
/// `A-Z a-z 0-9 . _ -`, so that it is its own stored key.
pub fn valid_host_name(name: &str) -> bool {
    (1..=MAX_HOST_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

// (Written with `crate::text`, not `format!`: no `core::fmt` in wasm. The
// records are appended to bytes, so that a batch writes them in place
// (`Batch::put_with`); the `String` forms name records in errors and
// snapshots. Built out of line: each is called from several places, and
// inlined copies are kilobytes of wasm.)

/// A record name appended as bytes, as a `String` (all of them are ASCII).
fn named(push: &dyn Fn(&mut Vec<u8>)) -> String {
    let mut v = Vec::new();
    push(&mut v);
    String::from_utf8(v).unwrap_or_default()
}

#[inline(never)]
pub fn host_key(name: &str) -> String {
    named(&|v| push_host_key(v, name))
}

#[inline(never)]
pub fn push_host_key(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(HOST_PREFIX.as_bytes());
    out.extend_from_slice(name.as_bytes());
}

#[inline(never)]
pub fn lease_key(id: LeaseId) -> String {
    named(&|v| push_lease_key(v, id))
}

#[inline(never)]
pub fn push_lease_key(out: &mut Vec<u8>, id: LeaseId) {
    out.extend_from_slice(LEASE_PREFIX.as_bytes());
    push_hex16(out, id as u64);
}

pub fn encode_lease(l: &StoredLease) -> Vec<u8> {
    let mut v = Vec::new();
    push_lease(&mut v, l);
    v
}

#[inline(never)]
pub fn push_lease(out: &mut Vec<u8>, l: &StoredLease) {
    out.push(BINARY);
    out.push(u8::from(l.deadline.is_some()));
    push_varint(out, l.ttl);
    if let Some(d) = l.deadline {
        push_varint(out, d);
    }
    push_varint(out, l.remaining);
}

pub fn encode_revision(rev: i64) -> Vec<u8> {
    let mut v = Vec::new();
    push_dec(&mut v, rev);
    v
}

/// Bytes that stay readable in a stored key; everything else is %XX.
pub(super) fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b':' | b'@')
}

#[inline(never)]
pub fn key_key(key: &[u8]) -> String {
    named(&|v| push_key_key(v, key))
}

#[inline(never)]
pub fn push_key_key(out: &mut Vec<u8>, key: &[u8]) {
    out.reserve(KEY_PREFIX.len() + key.len());
    out.extend_from_slice(KEY_PREFIX.as_bytes());
    push_key_name(out, key);
}

fn push_key_name(out: &mut Vec<u8>, key: &[u8]) {
    // Runs of plain bytes are copied whole: most keys are one run.
    let mut rest = key;
    while !rest.is_empty() {
        let n = rest.iter().position(|&b| !plain(b)).unwrap_or(rest.len());
        out.extend_from_slice(&rest[..n]);
        if let Some((&b, tail)) = rest[n..].split_first() {
            push_escape(out, b);
            rest = tail;
        } else {
            break;
        }
    }
}

/// The record of a superseded version of `key` from `revision` on.
#[inline(never)]
pub fn old_key(revision: i64, sub: u32, key: &[u8]) -> String {
    named(&|v| push_old_key(v, revision, sub, key))
}

#[inline(never)]
pub fn push_old_key(out: &mut Vec<u8>, revision: i64, sub: u32, key: &[u8]) {
    out.reserve(OLD_PREFIX.len() + 18 + key.len());
    out.extend_from_slice(OLD_PREFIX.as_bytes());
    push_hex16(out, revision as u64);
    if sub > 0 {
        out.push(b'.');
        push_udec(out, sub.into());
    }
    out.push(b'/');
    push_key_name(out, key);
}

/// A superseded version: the entry, or None for a delete.
pub fn encode_old(e: Option<&Entry>) -> Vec<u8> {
    let mut v = Vec::new();
    push_old(&mut v, e);
    v
}

#[inline(never)]
pub fn push_old(out: &mut Vec<u8>, e: Option<&Entry>) {
    match e {
        Some(e) => push_entry(out, e),
        None => out.extend_from_slice(TOMBSTONE),
    }
}

pub fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut v = Vec::new();
    push_entry(&mut v, e);
    v
}

#[inline(never)]
pub fn push_entry(out: &mut Vec<u8>, e: &Entry) {
    out.reserve(48 + e.value.len());
    out.push(BINARY);
    out.push(u8::from(e.text));
    push_varint(out, e.create_revision);
    push_varint(out, e.mod_revision);
    push_varint(out, e.version);
    push_varint(out, e.lease);
    push_varint(out, e.sub.into());
    out.extend_from_slice(&e.value);
}
