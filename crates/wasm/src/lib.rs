//! The JavaScript binding: translates between the core and JS, nothing more.
//! Input checking, defaults, hex ids, timers and events live in the JS
//! wrapper (`js/`), which is the only caller of this class.
//!
//! Hot paths return scalars and leave extra results in a small `scratch`
//! array of f64 that JS reads through a view on wasm memory, so that no JS
//! object is built per call. Lease ids cross as two u32 halves. Positions in
//! the scratch array and in the flat rows are named once, by the exported
//! enums below, which `js/binding.js` reads at load.

#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Float64Array, Function, Object, Reflect, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

mod codec;

use codec::{Reader, Writer};
#[cfg(feature = "etcd")]
use edge_lease_core::KeyBucketCursor;
use edge_lease_core::{
    Batch, Config, Entry, Error, LeaseId, Lessor, PutOptions, Restore, Revoked, SnapshotCursor,
    Storage,
};

/// Positions in the scratch array (see `RawLessor::scratch`).
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum Slot {
    /// A lease id's halves: grant's new id, or an entry's lease (0, 0: none).
    IdHi = 0,
    IdLo = 1,
    /// An entry: of `get`, or the previous one of `put` and `delete`.
    CreateRevision = 2,
    ModRevision = 3,
    Version = 4,
    /// The entry's value in wasm memory, readable until the next call into
    /// this object, and 1 if it was written as text.
    ValuePtr = 5,
    ValueLen = 6,
    Text = 7,
    /// put: 1 if the key was created (for an if-absent put: written).
    Created = 8,
    /// delete: 1 if a key was deleted.
    Deleted = 9,
    /// put, delete: 1 if the entry slots hold the previous entry.
    HasPrev = 10,
    /// time_to_live: remaining whole seconds, remaining ms, granted TTL.
    Ttl = 11,
    TtlMs = 12,
    GrantedTtl = 13,
}

const SLOTS: usize = Slot::GrantedTtl as usize + 1;

/// One revoked or expired lease in the flat rows of `revoke` and `tick`:
/// these fields, then `KeyCount` key lengths from `KeyLengths` on.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum RevokedRow {
    IdHi = 0,
    IdLo = 1,
    Revision = 2,
    KeyCount = 3,
    KeyLengths = 4,
}

/// One row of `range`.
#[wasm_bindgen]
#[derive(Clone, Copy)]
pub enum RangeRow {
    Key = 0,
    Value = 1,
    CreateRevision = 2,
    ModRevision = 3,
    Version = 4,
    LeaseHi = 5,
    LeaseLo = 6,
}

/// The numeric options of `Config`, under the wrapper's names: `defaults`
/// gives them, `config_of` reads them back. `history` is Infinity for
/// "keep everything" (i64::MAX).
const OPTIONS: [&str; 8] = [
    "minTtl",
    "revokeRate",
    "maxKeyBytes",
    "maxValueBytes",
    "maxKeysPerLease",
    "maxTxnOps",
    "history",
    "quotaBytes",
];

/// The core's defaults (`Config::default()`) under the wrapper's option
/// names: the one place the wrapper, its types and the README take them from.
#[wasm_bindgen]
pub fn defaults() -> Object {
    let d = Config::default();
    let values = [
        d.min_ttl as f64,
        d.revoke_rate as f64,
        d.max_key_bytes as f64,
        d.max_value_bytes as f64,
        d.max_keys_per_lease as f64,
        d.max_txn_ops as f64,
        if d.history == i64::MAX {
            f64::INFINITY
        } else {
            d.history as f64
        },
        d.quota_bytes as f64,
    ];
    let o = Object::new();
    for (name, v) in OPTIONS.iter().zip(values) {
        let _ = Reflect::set(&o, &(*name).into(), &v.into());
    }
    o
}

/// A `Config` from the wrapper's checked options object.
fn config_of(o: &Object) -> Config {
    let get = |name: &str| {
        Reflect::get(o, &name.into())
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(f64::NAN)
    };
    let [min_ttl, rate, max_key, max_value, max_keys, max_ops, history, quota] = OPTIONS.map(get);
    Config {
        min_ttl: min_ttl as i64,
        revoke_rate: rate as u32,
        max_key_bytes: max_key as usize,
        max_value_bytes: max_value as usize,
        max_keys_per_lease: max_keys as usize,
        max_txn_ops: max_ops as usize,
        // `as` saturates: Infinity is i64::MAX, keep everything.
        history: history as i64,
        quota_bytes: quota as usize,
    }
}

/// Bytes of `pages` wasm pages, in f64: 65536 pages (4 GiB) overflow a
/// 32-bit usize, which read 0.
pub fn pages_to_bytes(pages: usize) -> f64 {
    pages as f64 * 65536.0
}

/// Host time: the wrapper has already checked it is a finite number.
fn ms(now: f64) -> i64 {
    now as i64
}

fn id_of(hi: u32, lo: u32) -> LeaseId {
    (((hi as u64) << 32) | lo as u64) as i64
}

fn hi(id: LeaseId) -> f64 {
    ((id as u64) >> 32) as f64
}

fn lo(id: LeaseId) -> f64 {
    (id as u64 & 0xffff_ffff) as f64
}

fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    let _ = Reflect::set(&err, &"code".into(), &e.code().into());
    if let Error::CorruptEntry { key, .. } = e {
        let _ = Reflect::set(&err, &"entry".into(), &key.as_str().into());
    }
    if let Error::Compacted(rev) = e {
        let _ = Reflect::set(&err, &"compactRevision".into(), &(*rev as f64).into());
    }
    err.into()
}

fn key_str(k: &[u8]) -> JsValue {
    // Keys only ever arrive from JS as strings, so they are UTF-8.
    JsValue::from_str(&String::from_utf8_lossy(k))
}

fn value_js(e: &Entry) -> JsValue {
    if e.text {
        JsValue::from_str(std::str::from_utf8(&e.value).unwrap_or_default())
    } else {
        Uint8Array::from(&e.value[..]).into()
    }
}

/// Sets the entry slots of `scratch` (a free function: the entry may be
/// borrowed from the same `RawLessor`).
fn entry_slots(scratch: &mut [f64; SLOTS], e: &Entry) {
    scratch[Slot::CreateRevision as usize] = e.create_revision as f64;
    scratch[Slot::ModRevision as usize] = e.mod_revision as f64;
    scratch[Slot::Version as usize] = e.version as f64;
    scratch[Slot::IdHi as usize] = hi(e.lease);
    scratch[Slot::IdLo as usize] = lo(e.lease);
    scratch[Slot::ValuePtr as usize] = e.value.as_ptr() as usize as f64;
    scratch[Slot::ValueLen as usize] = e.value.len() as f64;
    scratch[Slot::Text as usize] = e.text as u8 as f64;
}

fn keys_js(keys: &[edge_lease_core::Key]) -> Array {
    keys.iter().map(|k| key_str(k)).collect()
}

/// Appends revoked or expired leases as `[hi, lo, revision, key count, key
/// lengths...]` to `meta` and their keys to `keys`, so that any number of
/// them cross to JS as one Float64Array and one string (two calls, instead
/// of an array and a string per lease).
fn revoked_flat(list: &[Revoked], meta: &mut Vec<f64>, keys: &mut String) {
    for r in list {
        let mut head = [0.0; RevokedRow::KeyLengths as usize];
        head[RevokedRow::IdHi as usize] = hi(r.id);
        head[RevokedRow::IdLo as usize] = lo(r.id);
        head[RevokedRow::Revision as usize] = r.revision as f64;
        head[RevokedRow::KeyCount as usize] = r.keys.len() as f64;
        meta.extend_from_slice(&head);
        for k in &r.keys {
            let k = String::from_utf8_lossy(k);
            // JS slices by UTF-16 code units.
            meta.push(k.encode_utf16().count() as f64);
            keys.push_str(&k);
        }
    }
}

/// Calls the binding's write function with the batch packed in one buffer
/// (`codec::pack_batch`): one copy out, instead of a string, an array and a
/// Uint8Array per entry. A throw fails the operation; promises are the
/// wrapper's business.
struct JsStorage {
    write: Function,
    packed: Vec<u8>,
}

impl Storage for JsStorage {
    fn write(&mut self, batch: &Batch) -> Result<(), String> {
        codec::pack_batch(batch, &mut self.packed);
        let bytes = Uint8Array::from(&self.packed[..]);
        self.write
            .call1(&JsValue::NULL, &bytes)
            .map(|_| ())
            .map_err(|e| match e.dyn_ref::<js_sys::Error>() {
                Some(err) => String::from(err.message()),
                None => e
                    .as_string()
                    .unwrap_or_else(|| "the storage callback threw".into()),
            })
    }
}

#[wasm_bindgen]
pub struct RawLessor {
    inner: Lessor,
    scratch: Box<[f64; SLOTS]>,
    /// The error of the last failed hot-path call or tick.
    error: Option<Error>,
    keys_out: String,
    /// The previous entry of the last put or delete, whose value the
    /// wrapper reads in place (see `Slot::ValuePtr`).
    prev: Option<Entry>,
}

#[wasm_bindgen]
impl RawLessor {
    /// A lessor with the options of `defaults()`'s shape.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &Object) -> Result<RawLessor, JsValue> {
        let inner = Lessor::new(config_of(config)).map_err(|e| js_error(&e))?;
        Ok(RawLessor::wrap(inner))
    }

    /// Rebuilds from the stored entries handed to `restore` (`RawRestore`);
    /// with `write`, every later change is first handed to it.
    pub fn restore(
        config: &Object,
        restore: RawRestore,
        now: f64,
        write: Option<Function>,
    ) -> Result<RawLessor, JsValue> {
        let storage = write.map(|write| {
            Box::new(JsStorage {
                write,
                packed: Vec::new(),
            }) as Box<dyn Storage>
        });
        let inner = restore
            .0
            .finish(config_of(config), now as i64, storage)
            .map_err(|e| js_error(&e))?;
        Ok(RawLessor::wrap(inner))
    }

    fn wrap(inner: Lessor) -> RawLessor {
        RawLessor {
            inner,
            scratch: Box::new([0.0; SLOTS]),
            error: None,
            keys_out: String::new(),
            prev: None,
        }
    }

    fn set(&mut self, slot: Slot, v: f64) {
        self.scratch[slot as usize] = v;
    }

    /// A view of the scratch array. It lives in wasm memory: when memory
    /// grows the view empties and the caller asks again.
    pub fn scratch(&self) -> Float64Array {
        // SAFETY: the boxed array never moves while self lives, and the view
        // is only read by the wrapper between calls into this object.
        unsafe { Float64Array::view(&self.scratch[..]) }
    }

    /// Bytes of wasm linear memory (for benchmarks).
    pub fn memory_bytes() -> f64 {
        pages_to_bytes(core::arch::wasm32::memory_size(0))
    }

    /// Keeps a hot path's error for `take_error` and returns NaN: a
    /// `Result` return crosses to JS as a freshly allocated array on every
    /// call, successful or not.
    fn fail(&mut self, e: Error) -> f64 {
        self.error = Some(e);
        f64::NAN
    }

    /// The error behind the last NaN (or a failed `tick`), or undefined.
    pub fn take_error(&mut self) -> JsValue {
        match self.error.take() {
            Some(e) => js_error(&e),
            None => JsValue::UNDEFINED,
        }
    }

    /// Returns the granted TTL, NaN on error; the id in `Slot::IdHi`/`IdLo`.
    pub fn grant(&mut self, now: f64, ttl: f64, id_hi: u32, id_lo: u32) -> f64 {
        match self.inner.grant(ms(now), ttl as i64, id_of(id_hi, id_lo)) {
            Ok(g) => {
                self.set(Slot::IdHi, hi(g.id));
                self.set(Slot::IdLo, lo(g.id));
                g.ttl as f64
            }
            Err(e) => self.fail(e),
        }
    }

    /// Returns the TTL, NaN on error.
    pub fn renew(&mut self, now: f64, id_hi: u32, id_lo: u32) -> f64 {
        match self.inner.renew(ms(now), id_of(id_hi, id_lo)) {
            Ok(t) => t as f64,
            Err(e) => self.fail(e),
        }
    }

    /// Returns the flat form of `revoked_flat`; the keys via `take_keys`.
    pub fn revoke(&mut self, now: f64, id_hi: u32, id_lo: u32) -> Result<Float64Array, JsValue> {
        let now = ms(now);
        let r = self
            .inner
            .revoke(now, id_of(id_hi, id_lo))
            .map_err(|e| js_error(&e))?;
        Ok(self.flat(&[r]))
    }

    fn flat(&mut self, list: &[Revoked]) -> Float64Array {
        let mut meta = Vec::with_capacity(list.len() * 5);
        self.keys_out.clear();
        revoked_flat(list, &mut meta, &mut self.keys_out);
        Float64Array::from(&meta[..])
    }

    /// The keys of the last `revoke` or `tick`, concatenated.
    pub fn take_keys(&mut self) -> String {
        std::mem::take(&mut self.keys_out)
    }

    /// Undefined if not found; else the keys (empty unless asked), with
    /// `Slot::Ttl`, `TtlMs` and `GrantedTtl` set.
    /// With `bytes`, the keys as Uint8Arrays (keys need not be UTF-8).
    pub fn time_to_live(
        &mut self,
        now: f64,
        id_hi: u32,
        id_lo: u32,
        with_keys: bool,
        bytes: bool,
    ) -> JsValue {
        let now = ms(now);
        match self.inner.time_to_live(now, id_of(id_hi, id_lo), with_keys) {
            Ok(t) => {
                self.set(Slot::Ttl, t.ttl as f64);
                self.set(Slot::TtlMs, t.ttl_ms as f64);
                self.set(Slot::GrantedTtl, t.granted_ttl as f64);
                if bytes {
                    let keys: Array = t.keys.iter().map(|k| Uint8Array::from(&k[..])).collect();
                    return keys.into();
                }
                keys_js(&t.keys).into()
            }
            Err(_) => JsValue::UNDEFINED,
        }
    }

    /// Live lease ids as [hi, lo, hi, lo, ...], soonest deadline first.
    pub fn leases(&mut self, now: f64) -> Uint32Array {
        let now = ms(now);
        let ids = self.inner.leases(now);
        let mut flat = Vec::with_capacity(ids.len() * 2);
        for id in ids {
            flat.push(((id as u64) >> 32) as u32);
            flat.push(id as u64 as u32);
        }
        Uint32Array::from(&flat[..])
    }

    /// Returns the revision, NaN on error; sets `Slot::Created`, and
    /// `Slot::HasPrev` with the entry slots: the previous entry when `prev`
    /// asks for it, and always the holder when an if-absent put is refused.
    #[allow(clippy::too_many_arguments)]
    pub fn put_str(
        &mut self,
        now: f64,
        key: &str,
        value: &str,
        lease_hi: u32,
        lease_lo: u32,
        if_absent: bool,
        prev: bool,
    ) -> f64 {
        let opts = PutOptions {
            lease: id_of(lease_hi, lease_lo),
            if_absent,
            text: true,
            prev,
            ..PutOptions::default()
        };
        self.put(now, key, value.as_bytes(), opts)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn put_bytes(
        &mut self,
        now: f64,
        key: &str,
        value: &[u8],
        lease_hi: u32,
        lease_lo: u32,
        if_absent: bool,
        prev: bool,
    ) -> f64 {
        let opts = PutOptions {
            lease: id_of(lease_hi, lease_lo),
            if_absent,
            text: false,
            prev,
            ..PutOptions::default()
        };
        self.put(now, key, value, opts)
    }

    fn put(&mut self, now: f64, key: &str, value: &[u8], opts: PutOptions) -> f64 {
        match self.inner.put(ms(now), key.as_bytes(), value, opts) {
            Ok(r) => {
                self.set(Slot::Created, r.created as u8 as f64);
                self.show_prev(r.prev);
                r.revision as f64
            }
            Err(e) => self.fail(e),
        }
    }

    /// Keeps a put's or delete's previous entry and shows it in the entry slots.
    fn show_prev(&mut self, prev: Option<Entry>) {
        self.prev = prev;
        self.set(Slot::HasPrev, self.prev.is_some() as u8 as f64);
        if let Some(e) = &self.prev {
            entry_slots(&mut self.scratch, e);
        }
    }

    /// Whether the key is live; if so the entry slots are set. The wrapper
    /// reads the value straight from wasm memory before its next call:
    /// decoding short values itself is several times faster than a returned
    /// string (TextDecoder), and bytes are copied only once.
    pub fn get(&mut self, now: f64, key: &str) -> bool {
        let now = ms(now);
        let Some(e) = self.inner.get(now, key.as_bytes()) else {
            return false;
        };
        entry_slots(&mut self.scratch, e);
        true
    }

    /// The module's `WebAssembly.Memory`, for reading values in place.
    pub fn memory() -> JsValue {
        wasm_bindgen::memory()
    }

    /// Live entries under `prefix`, sorted, one `RangeRow` array each.
    pub fn range(&mut self, now: f64, prefix: &str) -> Array {
        let now = ms(now);
        self.inner
            .range(now, prefix.as_bytes())
            .into_iter()
            .map(|(k, e)| {
                let row = Array::new_with_length(RangeRow::LeaseLo as u32 + 1);
                let set = |f: RangeRow, v: JsValue| row.set(f as u32, v);
                set(RangeRow::Key, key_str(k));
                set(RangeRow::Value, value_js(e));
                set(RangeRow::CreateRevision, (e.create_revision as f64).into());
                set(RangeRow::ModRevision, (e.mod_revision as f64).into());
                set(RangeRow::Version, (e.version as f64).into());
                set(RangeRow::LeaseHi, hi(e.lease).into());
                set(RangeRow::LeaseLo, lo(e.lease).into());
                row
            })
            .collect()
    }

    /// Returns the revision; sets `Slot::Deleted`, and `Slot::HasPrev` with
    /// the entry slots: the deleted entry (its lease is the delete event's).
    pub fn delete(&mut self, now: f64, key: &str) -> Result<f64, JsValue> {
        let now = ms(now);
        let r = self
            .inner
            .delete(now, key.as_bytes(), true)
            .map_err(|e| js_error(&e))?;
        self.set(Slot::Deleted, r.deleted as u8 as f64);
        self.show_prev(r.prev);
        Ok(r.revision as f64)
    }

    /// Expired leases in the flat form of `revoked_flat`, keys via
    /// `take_keys`. If storage stopped the tick early, `take_error` has the
    /// error.
    pub fn tick(&mut self, now: f64) -> Float64Array {
        let now = ms(now);
        let t = self.inner.tick(now);
        self.error = t.error;
        self.flat(&t.expired)
    }

    /// Epoch ms, or NaN when nothing is scheduled.
    pub fn next_deadline(&mut self) -> f64 {
        self.inner.next_deadline().map_or(f64::NAN, |d| d as f64)
    }

    pub fn promote(&mut self, now: f64, extend_ms: f64) -> Result<(), JsValue> {
        let now = ms(now);
        self.inner
            .promote(now, extend_ms as i64)
            .map_err(|e| js_error(&e))
    }

    pub fn demote(&mut self, now: f64) {
        let now = ms(now);
        self.inner.demote(now);
    }

    /// Holds expiry from `since` (epoch ms), or lets it go on.
    pub fn hold_expiry(&mut self, held: bool, since: f64) {
        self.inner.hold_expiry(held.then(|| ms(since)));
    }

    /// Since when expiry is held, if it is.
    pub fn expiry_held_since(&self) -> Option<f64> {
        self.inner.expiry_held().map(|t| t as f64)
    }

    pub fn checkpoint(
        &mut self,
        now: f64,
        id_hi: u32,
        id_lo: u32,
        remaining_ms: f64,
    ) -> Result<(), JsValue> {
        let now = ms(now);
        self.inner
            .checkpoint(now, id_of(id_hi, id_lo), remaining_ms as i64)
            .map_err(|e| js_error(&e))
    }

    pub fn revision(&self) -> f64 {
        self.inner.revision() as f64
    }

    /// Keys held (those of leases past their deadline until `tick` included).
    pub fn key_count(&self) -> f64 {
        self.inner.key_count() as f64
    }

    pub fn is_primary(&self) -> bool {
        self.inner.is_primary()
    }

    // ---- etcd's KV requests: one byte buffer each way (see codec.rs) ----

    /// Range: a codec range request in, a codec range response out.
    pub fn range_kv(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let q = Reader::whole(req, Reader::range).map_err(|e| js_error(&e))?;
        let resp = self.inner.range_kv(ms(now), &q).map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.range(&resp);
        Ok(w.0)
    }

    /// etcd's Put: a codec put request in, a codec put response out.
    pub fn put_kv(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let p = Reader::whole(req, Reader::put).map_err(|e| js_error(&e))?;
        let resp = self.inner.put_kv(ms(now), &p).map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.put(&p.key, &resp);
        Ok(w.0)
    }

    /// The counts etcd's metrics keep, in `Counts::fields`'s order.
    pub fn counts(&self) -> Float64Array {
        Float64Array::from(&self.inner.counts().fields().map(|n| n as f64)[..])
    }

    pub fn delete_range(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let d = Reader::whole(req, Reader::delete).map_err(|e| js_error(&e))?;
        let resp = self
            .inner
            .delete_range(ms(now), &d)
            .map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.delete(&resp);
        Ok(w.0)
    }

    pub fn txn(&mut self, now: f64, req: &[u8]) -> Result<Vec<u8>, JsValue> {
        let t = Reader::whole(req, Reader::txn).map_err(|e| js_error(&e))?;
        let resp = self.inner.txn(ms(now), &t).map_err(|e| js_error(&e))?;
        let mut w = Writer::default();
        w.txn(&t, &resp);
        Ok(w.0)
    }

    /// Returns the current revision.
    pub fn compact(&mut self, revision: f64) -> Result<f64, JsValue> {
        self.inner
            .compact(revision as i64)
            .map(|r| r as f64)
            .map_err(|e| js_error(&e))
    }

    /// One step of the compaction's sweep, of about `max` versions;
    /// returns how many changes are left to visit.
    pub fn compact_step(&mut self, max: u32) -> Result<f64, JsValue> {
        self.inner
            .compact_step(max as usize)
            .map(|n| n as f64)
            .map_err(|e| js_error(&e))
    }

    /// Changes the compaction's sweep has yet to visit.
    pub fn compaction_pending(&self) -> f64 {
        self.inner.compaction_pending() as f64
    }

    /// Bytes of keys, values and history, as the quota counts them.
    pub fn size_bytes(&self) -> f64 {
        self.inner.size_bytes() as f64
    }

    /// The host entry `name` (a copy), or undefined.
    pub fn host_entry(&self, name: &str) -> Option<Vec<u8>> {
        self.inner.host_entry(name).map(<[u8]>::to_vec)
    }

    /// Sets (bytes) or removes (undefined) the host entry `name`.
    pub fn set_host_entry(&mut self, name: &str, value: Option<Vec<u8>>) -> Result<(), JsValue> {
        self.inner
            .set_host_entry(name, value.as_deref())
            .map_err(|e| js_error(&e))
    }

    /// The compaction point.
    pub fn compacted(&self) -> f64 {
        self.inner.compacted() as f64
    }

    /// Starts a watcher from a codec watch request; returns its id.
    pub fn watch(&mut self, req: &[u8]) -> Result<f64, JsValue> {
        let q = Reader::whole(req, Reader::watch).map_err(|e| js_error(&e))?;
        self.inner
            .watch(&q)
            .map(|id| id as f64)
            .map_err(|e| js_error(&e))
    }

    pub fn cancel_watch(&mut self, id: f64) -> bool {
        self.inner.cancel_watch(id as i64)
    }

    pub fn pause_watch(&mut self, id: f64, paused: bool) -> bool {
        self.inner.pause_watch(id as i64, paused)
    }

    pub fn watch_caught_up(&self, id: f64) -> bool {
        self.inner.watch_caught_up(id as i64)
    }

    /// What the watchers have not been given, in the codec's format.
    pub fn poll_watches(&mut self) -> Vec<u8> {
        let mut w = Writer::default();
        w.watch_events(&self.inner.poll_watches());
        w.0
    }

    pub fn watches_pending(&self) -> bool {
        self.inner.watches_pending()
    }

    /// Starts a snapshot taken in steps (`snapshot_next`).
    pub fn snapshot_cursor(&self) -> RawSnapshot {
        RawSnapshot(self.inner.snapshot_cursor())
    }

    /// The snapshot's next entries, about `max`, packed as `restore` takes
    /// them (one copy out, not two JS objects per entry); empty once done.
    pub fn snapshot_next(&self, cursor: &mut RawSnapshot, max: u32) -> Vec<u8> {
        let mut entries = Vec::new();
        self.inner
            .snapshot_next(&mut cursor.0, max as usize, &mut entries);
        codec::pack_entries(&entries)
    }
}

/// A snapshot in progress (`RawLessor::snapshot_cursor`).
#[wasm_bindgen]
pub struct RawSnapshot(SnapshotCursor);

/// A restore's stored entries, handed over in pieces (`Restore`).
#[wasm_bindgen]
#[derive(Default)]
pub struct RawRestore(Restore);

#[wasm_bindgen]
impl RawRestore {
    #[wasm_bindgen(constructor)]
    pub fn new() -> RawRestore {
        RawRestore::default()
    }

    /// Entries packed in one buffer by the JS half (`packEntryParts` in
    /// js/codec.js: one copy in, instead of two JS calls per entry).
    pub fn add(&mut self, packed: &[u8]) -> Result<(), JsValue> {
        for (k, v) in codec::entries(packed).map_err(|e| js_error(&e))? {
            self.0.add(k, v).map_err(|e| js_error(&e))?;
        }
        Ok(())
    }
}

/// What only an etcd server needs (feature `etcd`).
#[cfg(feature = "etcd")]
#[wasm_bindgen]
impl RawLessor {
    /// etcd's HashKV up to `upto` (0: the current revision).
    pub fn hash_kv(&self, upto: f64) -> Result<u32, JsValue> {
        self.inner.hash_kv(upto as i64).map_err(|e| js_error(&e))
    }

    /// etcd's key bucket for this history, read in pieces
    /// (`Lessor::etcd_key_bucket_cursor`).
    pub fn etcd_key_bucket_cursor(&self) -> RawKeyBucket {
        RawKeyBucket(self.inner.etcd_key_bucket_cursor())
    }

    /// The key bucket's next records, about `max` bytes; empty once done.
    pub fn etcd_key_bucket_next(
        &self,
        cursor: &mut RawKeyBucket,
        max: u32,
    ) -> Result<Vec<u8>, JsValue> {
        self.inner
            .etcd_key_bucket_next(&mut cursor.0, max as usize)
            .map_err(|e| js_error(&e))
    }
}

/// The key bucket read in pieces (`RawLessor::etcd_key_bucket_cursor`).
#[cfg(feature = "etcd")]
#[wasm_bindgen]
pub struct RawKeyBucket(KeyBucketCursor);

#[cfg(feature = "etcd")]
#[wasm_bindgen]
impl RawKeyBucket {
    /// Each record's key and value length (`KeyBucketCursor::take_heads`).
    pub fn take_heads(&mut self) -> Vec<u8> {
        self.0.take_heads()
    }
}
