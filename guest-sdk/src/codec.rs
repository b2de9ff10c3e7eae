//! Compact binary encoding of accumulators and other values kept in state.

/// A value that can be stored in keyed state.
pub trait Codec: Sized {
    fn encode(&self, out: &mut Vec<u8>);
    /// Read one value from the front of `input`, advancing it.
    fn decode(input: &mut &[u8]) -> Option<Self>;

    fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

fn take<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = input.split_at_checked(N)?;
    *input = rest;
    head.try_into().ok()
}

macro_rules! fixed {
    ($($t:ty),*) => {$(
        impl Codec for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn decode(input: &mut &[u8]) -> Option<Self> {
                take(input).map(<$t>::from_le_bytes)
            }
        }
    )*};
}
fixed!(u32, u64, i64, f64);

impl Codec for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u32).encode(out);
        out.extend_from_slice(self);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        let n = u32::decode(input)? as usize;
        let (head, rest) = input.split_at_checked(n)?;
        *input = rest;
        Some(head.to_vec())
    }
}

impl Codec for String {
    fn encode(&self, out: &mut Vec<u8>) {
        self.as_bytes().to_vec().encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        String::from_utf8(Vec::<u8>::decode(input)?).ok()
    }
}

impl<A: Codec, B: Codec> Codec for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some((A::decode(input)?, B::decode(input)?))
    }
}

impl<A: Codec, B: Codec, C: Codec> Codec for (A, B, C) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
        self.2.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some((A::decode(input)?, B::decode(input)?, C::decode(input)?))
    }
}

/// A time as 8 bytes that sort like the time (big-endian, sign bit flipped),
/// for state keys scanned in time order.
pub fn time_key(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// The inverse of [`time_key`]; `b` must hold 8 bytes.
pub fn time_of(b: &[u8]) -> i64 {
    (u64::from_be_bytes(b[..8].try_into().expect("8 bytes")) ^ (1 << 63)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_short_input_is_refused() {
        let v = (7u64, (-3i64, "hé".to_string()));
        let b = v.to_bytes();
        let mut s = &b[..];
        assert_eq!(<(u64, (i64, String))>::decode(&mut s), Some(v));
        assert!(s.is_empty());
        let mut short = &b[..5];
        assert_eq!(<(u64, (i64, String))>::decode(&mut short), None);
        assert!(time_key(-1) < time_key(0) && time_key(0) < time_key(5));
        assert_eq!(time_of(&time_key(-42)), -42);
    }
}
