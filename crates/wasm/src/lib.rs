//! The JavaScript binding: translates between the core and JS, nothing more.
//! Input checking, defaults, hex ids, timers and events live in the JS
//! wrapper (`js/`), which is the only caller of this class.
//!
//! Hot paths return scalars and leave extra results in a small `scratch`
//! array of f64 that JS reads through a view on wasm memory, so that no JS
//! object is built per call. Lease ids cross as two u32 halves. Positions in
//! the scratch array and in the flat rows are named once, by the exported
//! enums of `layout`, which `js/binding.js` reads at load.
//!
//! One module per concept: `RawLessor` itself in `lessor`, its calls in
//! `leases`, `keys`, `kv`, `watch`, `snapshot` and (feature `etcd`) `etcd`;
//! what they share in `layout`, `convert`, `error`, `config` and `storage`;
//! the byte formats in `codec` (requests, responses, watch events) and
//! `packed` (stored entries, storage batches); the allocator in `alloc`.

#![cfg(target_arch = "wasm32")]

mod alloc;
mod codec;
mod config;
mod convert;
mod error;
#[cfg(feature = "etcd")]
mod etcd;
mod keys;
mod kv;
mod layout;
mod leases;
mod lessor;
mod packed;
mod snapshot;
mod storage;
mod watch;

pub use config::defaults;
#[cfg(feature = "etcd")]
pub use etcd::RawKeyBucket;
pub use layout::{RangeRow, RevokedRow, Slot};
pub use lessor::{pages_to_bytes, RawLessor};
pub use snapshot::{RawRestore, RawSnapshot};
