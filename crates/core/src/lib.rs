//! edge-lease: an etcd-style lessor with attached keys, driven by the host's
//! clock and persisted through the host's storage.
//!
//! The core ([`Lessor`]) is plain Rust: it never reads a clock, sleeps or
//! spawns. Every operation takes the host's time in epoch milliseconds, which
//! makes it deterministic and testable natively. The binding crate
//! (`crates/wasm`) translates it for JavaScript. `docs/architecture.md` maps
//! the modules.

mod config;
mod counts;
mod error;
mod kv;
mod lease;
mod lessor;
mod ops;
mod order;
pub mod storage;
mod text;
mod types;
mod watch;
mod write;

pub use config::Config;
pub use counts::Counts;
pub use error::{Error, Result};
#[cfg(feature = "etcd")]
pub use kv::KeyBucketCursor;
pub use kv::{Event, RangeRequest, RangeResponse, SortOrder, SortTarget};
pub use lessor::snapshot::{Restore, SnapshotCursor};
pub use lessor::Lessor;
pub use ops::{
    Compare, CompareResult, CompareTarget, DeleteRequest, DeleteResponse, DeleteResult, Granted,
    Op, OpResponse, PutOptions, PutRequest, PutResult, Revoked, Tick, TimeToLive, TxnRequest,
    TxnResponse,
};
pub use storage::{Batch, Storage};
pub use types::{Entry, Key, LeaseId, MAX_LEASE_TTL};
pub use watch::{Polled, WatchEvents, WatchRequest};
