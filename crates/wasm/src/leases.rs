//! `RawLessor`'s lease calls: grant, renew, revoke, expiry (`tick`), and the
//! primary role under which leases expire. Hot paths return a scalar (NaN
//! on error, kept for `take_error`) and leave the rest in the scratch slots.

use edge_lease_core::Revoked;
use js_sys::{Array, Float64Array, Uint32Array, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::convert::{hi, id_of, keys_js, lo, ms};
use crate::error::js_error;
use crate::layout::{revoked_flat, Slot};
use crate::lessor::RawLessor;

#[wasm_bindgen]
impl RawLessor {
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

    pub fn is_primary(&self) -> bool {
        self.inner.is_primary()
    }
}
