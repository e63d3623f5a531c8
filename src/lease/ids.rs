//! Lease ids the lessor picks when the client does not.

/// splitmix64: a small, fast generator with a full 2^64 period, so ids from
/// one seed never repeat before the collision check matters. The seed comes
/// from the OS once (getrandom): one entropy call per grant would cost more
/// than the grant itself (a JS crypto call in wasm).
pub struct IdGen(u64);

impl IdGen {
    pub fn seeded() -> IdGen {
        // Without an entropy source ids are still distinct, just predictable.
        IdGen(getrandom::u64().unwrap_or(0x853c_49e6_748f_ea9b))
    }

    /// The next candidate: a positive 63-bit id, or 0 (which the table skips).
    pub fn next(&mut self) -> i64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 1) as i64
    }
}
