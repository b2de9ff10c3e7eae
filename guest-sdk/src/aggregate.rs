//! Aggregates for windows: the [`Aggregate`] trait users implement, and
//! [`Count`].

use crate::codec::Codec;
use crate::{Record, RecordError};

/// A window's bounds: `[start, end)` in ms since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub end: i64,
}

/// A user aggregate: how records fold into an accumulator and what a
/// window's result looks like.
pub trait Aggregate: 'static {
    type Acc: Codec + Clone;
    fn zero(&self) -> Self::Acc;
    fn add(&self, acc: &mut Self::Acc, record: &Record<'_>) -> Result<(), RecordError>;
    /// Fold `other` into `into` (session windows merge when a record
    /// bridges them).
    fn merge(&self, into: &mut Self::Acc, other: Self::Acc);
    /// Write the output value for one window.
    fn result(&self, key: &[u8], window: Window, acc: &Self::Acc, out: &mut Vec<u8>);
}

/// Counts records; emits `{"key":..,"start":..,"end":..,"count":..}`.
pub struct Count;

impl Aggregate for Count {
    type Acc = u64;
    fn zero(&self) -> u64 {
        0
    }
    fn add(&self, acc: &mut u64, _: &Record<'_>) -> Result<(), RecordError> {
        *acc += 1;
        Ok(())
    }
    fn merge(&self, into: &mut u64, other: u64) {
        *into += other;
    }
    fn result(&self, key: &[u8], w: Window, acc: &u64, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"key\":");
        json_string(&String::from_utf8_lossy(key), out);
        out.extend_from_slice(
            format!(",\"start\":{},\"end\":{},\"count\":{acc}}}", w.start, w.end).as_bytes(),
        );
    }
}

/// Append `s` as a JSON string literal.
pub fn json_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out.push(b'"');
}
