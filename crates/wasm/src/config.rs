//! The core's `Config` as a JS options object, under the wrapper's names.

use edge_lease_core::Config;
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

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
pub(crate) fn config_of(o: &Object) -> Config {
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
