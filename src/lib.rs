//! edge-lease: an etcd-style lessor with attached keys, driven by the host's
//! clock and persisted through the host's storage.
//!
//! The core ([`Lessor`]) is plain Rust: it never reads a clock, sleeps or
//! spawns. Every operation takes the host's time in epoch milliseconds, which
//! makes it deterministic and testable natively. The `wasm` module (only on
//! wasm32) translates it for JavaScript.

mod error;
mod expiry;
mod keyspace;
mod lessor;
pub mod storage;
// Public only so tests/wasm.rs can test the binding itself.
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{Error, Result};
pub use keyspace::{Entry, Key};
pub use lessor::{
    Config, DeleteResult, Granted, Lessor, PutOptions, PutResult, Revoked, Tick, TimeToLive,
};
pub use storage::{Batch, Storage};

/// A lease id. 0 means "no lease"; negative ids are allowed, as in etcd.
pub type LeaseId = i64;

/// The largest TTL `grant` accepts, in seconds (etcd's MaxLeaseTTL).
pub const MAX_LEASE_TTL: i64 = 9_000_000_000;
