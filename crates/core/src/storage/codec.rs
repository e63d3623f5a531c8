//! The stored layout: how leases, keys and the revision are written as
//! store entries (read back by `decode.rs`). Version 1 (all keys
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
// record names are built out of line: each is called from several places,
// and inlined copies are kilobytes of wasm.)

#[inline(never)]
pub fn host_key(name: &str) -> String {
    let mut s = String::from(HOST_PREFIX);
    s.push_str(name);
    s
}

#[inline(never)]
pub fn lease_key(id: LeaseId) -> String {
    let mut s = String::with_capacity(LEASE_PREFIX.len() + 16);
    s.push_str(LEASE_PREFIX);
    push_hex16(&mut s, id as u64);
    s
}

pub fn encode_lease(l: &StoredLease) -> Vec<u8> {
    let mut s = String::from("ttl=");
    push_dec(&mut s, l.ttl);
    s.push_str(" deadline=");
    match l.deadline {
        Some(d) => push_dec(&mut s, d),
        None => s.push_str("none"),
    }
    s.push_str(" remaining=");
    push_dec(&mut s, l.remaining);
    s.into_bytes()
}

pub fn encode_revision(rev: i64) -> Vec<u8> {
    let mut s = String::new();
    push_dec(&mut s, rev);
    s.into_bytes()
}

/// Bytes that stay readable in a stored key; everything else is %XX.
pub(super) fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b':' | b'@')
}

#[inline(never)]
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
            push_escape(s, b);
        }
    }
}

/// The record of a superseded version of `key` from `revision` on.
#[inline(never)]
pub fn old_key(revision: i64, sub: u32, key: &[u8]) -> String {
    let mut s = String::with_capacity(OLD_PREFIX.len() + 18 + key.len());
    s.push_str(OLD_PREFIX);
    push_hex16(&mut s, revision as u64);
    if sub > 0 {
        s.push('.');
        push_udec(&mut s, sub.into());
    }
    s.push('/');
    push_key_name(&mut s, key);
    s
}

/// A superseded version: the entry, or None for a delete.
pub fn encode_old(e: Option<&Entry>) -> Vec<u8> {
    e.map_or_else(|| TOMBSTONE.to_vec(), encode_entry)
}

pub fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut s = String::with_capacity(96 + e.value.len());
    s.push_str("create=");
    push_dec(&mut s, e.create_revision);
    s.push_str(" mod=");
    push_dec(&mut s, e.mod_revision);
    s.push_str(" version=");
    push_dec(&mut s, e.version);
    s.push_str(" lease=");
    push_hex16(&mut s, e.lease as u64);
    s.push_str(if e.text { " text=1" } else { " text=0" });
    if e.sub > 0 {
        s.push_str(" sub=");
        push_udec(&mut s, e.sub.into());
    }
    s.push('\n');
    let mut v = s.into_bytes();
    v.extend_from_slice(&e.value);
    v
}
