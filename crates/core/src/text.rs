//! Text built without `core::fmt`, whose machinery is kilobytes of wasm
//! (and slower): the stored layout's fields and the error messages. The
//! `push_*` functions append ASCII to bytes (a storage batch's records are
//! written in place, `storage::Batch`); `Text` appends pieces and numbers;
//! `String::from` takes the result. Never inlined: one copy of each, called
//! from every message.

const HEX: &[u8; 16] = b"0123456789abcdef";
const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Only `&str` and ASCII are pushed, so its bytes are always UTF-8.
pub struct Text(Vec<u8>);

impl Text {
    #[inline(never)]
    pub fn new(s: &str) -> Text {
        Text(s.as_bytes().to_vec())
    }

    #[inline(never)]
    pub fn s(mut self, s: &str) -> Text {
        self.0.extend_from_slice(s.as_bytes());
        self
    }

    /// `v` in decimal.
    #[inline(never)]
    pub fn dec(mut self, v: i64) -> Text {
        push_dec(&mut self.0, v);
        self
    }

    /// `v` in decimal.
    #[inline(never)]
    pub fn udec(mut self, v: u64) -> Text {
        push_udec(&mut self.0, v);
        self
    }

    /// `v` as 16 lowercase hex digits (`{:016x}`).
    #[inline(never)]
    pub fn hex(mut self, v: u64) -> Text {
        push_hex16(&mut self.0, v);
        self
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        // (Never fails: see `Text`.)
        String::from_utf8(t.0).unwrap_or_default()
    }
}

#[inline(never)]
pub fn push_dec(s: &mut Vec<u8>, v: i64) {
    if v < 0 {
        s.push(b'-');
    }
    push_udec(s, v.unsigned_abs());
}

#[inline(never)]
pub fn push_udec(s: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    s.extend_from_slice(&digits[at..]);
}

#[inline(never)]
pub fn push_hex16(s: &mut Vec<u8>, v: u64) {
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[(v >> ((15 - i) * 4)) as usize & 15];
    }
    s.extend_from_slice(&digits);
}

/// `%XX`, uppercase (`{b:02X}` after a `%`).
#[inline(never)]
pub fn push_escape(s: &mut Vec<u8>, b: u8) {
    s.extend_from_slice(&[
        b'%',
        HEX_UPPER[usize::from(b >> 4)],
        HEX_UPPER[usize::from(b & 15)],
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_format_writes() {
        for v in [
            0i64,
            1,
            -1,
            9,
            10,
            99,
            100,
            12345,
            i64::MAX,
            i64::MIN,
            -(1 << 53),
        ] {
            assert_eq!(String::from(Text::new("").dec(v)), format!("{v}"));
            assert_eq!(
                String::from(Text::new("").hex(v as u64)),
                format!("{:016x}", v as u64)
            );
        }
        for v in [0u64, 7, u64::MAX] {
            assert_eq!(String::from(Text::new("").udec(v)), format!("{v}"));
        }
        for b in [0u8, 9, 10, 0x2f, 0xff] {
            let mut s = Vec::new();
            push_escape(&mut s, b);
            assert_eq!(s, format!("%{b:02X}").into_bytes());
        }
        assert_eq!(String::from(Text::new("a").s("b").dec(3)), "ab3");
    }
}
