//! Lease ids the lessor picks when the client does not, and the seeds of
//! its hash maps: both straight from the OS's randomness.
//!
//! A client that can guess another's lease id can renew, revoke or attach
//! keys to it, so ids are not derived from a generator whose state a few
//! outputs reveal: they are read from the OS (crypto.getRandomValues in
//! wasm), 256 bytes at a time so one entropy call serves 32 grants.

use crate::error::{Error, Result};

pub struct IdGen {
    buf: [u8; 256],
    used: usize,
}

fn no_entropy(e: getrandom::Error) -> Error {
    // On wasm32 (the JS host's crypto, getrandom's `wasm_js`) the one
    // failure is that there is no Web Crypto, and this is its text: taken
    // as is rather than through `Display`, as no `core::fmt` goes into the
    // wasm build.
    #[cfg(target_arch = "wasm32")]
    let why = {
        let _ = e;
        String::from("Web Crypto API is unavailable")
    };
    #[cfg(not(target_arch = "wasm32"))]
    let why = e.to_string();
    Error::NoEntropy(why)
}

/// One random u64 from the OS, e.g. a hash seed.
pub fn random_u64() -> Result<u64> {
    getrandom::u64().map_err(no_entropy)
}

impl IdGen {
    /// Fails when the OS gives no randomness: never a fixed seed.
    pub fn new() -> Result<IdGen> {
        let mut g = IdGen {
            buf: [0; 256],
            used: 0,
        };
        g.refill()?;
        Ok(g)
    }

    fn refill(&mut self) -> Result<()> {
        getrandom::fill(&mut self.buf).map_err(no_entropy)?;
        self.used = 0;
        Ok(())
    }

    /// The next candidate: a random positive 63-bit id, or 0 (which the
    /// table skips).
    pub fn next(&mut self) -> Result<i64> {
        if self.used == self.buf.len() {
            self.refill()?;
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.buf[self.used..self.used + 8]);
        self.used += 8;
        Ok((u64::from_le_bytes(b) >> 1) as i64)
    }
}
