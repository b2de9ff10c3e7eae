//! How a join keeps its rows in the host's keyed state. A row's state key
//! is `J`, its side, the join key (length first, so one key's rows are
//! contiguous and no key is a prefix of another's), its event time (sign
//! flipped, big-endian, so byte order is time order) and its source
//! position (so equal times never collide). A time range of one key's rows
//! on one side is then one state scan.

use std::ops::Range;

pub(crate) const TAG: u8 = b'J';

/// Which input of the join a row came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    fn byte(self) -> u8 {
        match self {
            Side::Left => b'l',
            Side::Right => b'r',
        }
    }

    pub(crate) fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }
}

fn time_bytes(ts: i64) -> [u8; 8] {
    ((ts as u64) ^ (1 << 63)).to_be_bytes()
}

/// The state key of `side`'s rows of `key`, without time and position.
fn push_prefix(p: &mut Vec<u8>, side: Side, key: &[u8]) {
    p.push(TAG);
    p.push(side.byte());
    p.extend_from_slice(&(key.len() as u32).to_be_bytes());
    p.extend_from_slice(key);
}

/// The state key of one row.
pub(crate) fn row_key(side: Side, key: &[u8], ts: i64, partition: u32, offset: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 26);
    push_row_key(&mut k, side, key, ts, partition, offset);
    k
}

/// [`row_key`], appended to `buf`: where it lies in it.
pub(crate) fn push_row_key(
    buf: &mut Vec<u8>,
    side: Side,
    key: &[u8],
    ts: i64,
    partition: u32,
    offset: i64,
) -> Range<usize> {
    let start = buf.len();
    push_prefix(buf, side, key);
    buf.extend_from_slice(&time_bytes(ts));
    buf.extend_from_slice(&partition.to_be_bytes());
    buf.extend_from_slice(&time_bytes(offset));
    start..buf.len()
}

/// A stored row's parts: side, join key and event time.
pub(crate) fn parse(k: &[u8]) -> Option<(Side, &[u8], i64)> {
    let side = match k.get(1)? {
        b'l' => Side::Left,
        b'r' => Side::Right,
        _ => return None,
    };
    if k.first() != Some(&TAG) {
        return None;
    }
    let len = u32::from_be_bytes(k.get(2..6)?.try_into().ok()?) as usize;
    let key = k.get(6..6 + len)?;
    let t = u64::from_be_bytes(k.get(6 + len..14 + len)?.try_into().ok()?);
    Some((side, key, (t ^ (1 << 63)) as i64))
}

/// A stored row's value: whether it has been matched, then the record's
/// value.
pub(crate) fn encode(matched: bool, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + 1);
    push_encoded(&mut v, matched, value);
    v
}

/// [`encode`], appended to `buf`: where it lies in it.
pub(crate) fn push_encoded(buf: &mut Vec<u8>, matched: bool, value: &[u8]) -> Range<usize> {
    let start = buf.len();
    buf.push(matched as u8);
    buf.extend_from_slice(value);
    start..buf.len()
}

/// `(matched, value)` of a stored row.
pub(crate) fn decode(v: &[u8]) -> (bool, &[u8]) {
    match v.split_first() {
        Some((m, rest)) => (*m != 0, rest),
        None => (false, &[]),
    }
}

/// The state keys of `side`'s rows of `key` with event times in `[from,
/// to]`: `(start, end)`, a scan's bounds.
pub(crate) fn bounds(side: Side, key: &[u8], from: i64, to: i64) -> (Vec<u8>, Vec<u8>) {
    let mut buf = Vec::with_capacity(2 * key.len() + 28);
    let (start, end) = push_bounds(&mut buf, side, key, from, to);
    (buf[start].to_vec(), buf[end].to_vec())
}

/// [`bounds`], appended to `buf`: where each lies in it (a chunk's bounds
/// share one buffer).
pub(crate) fn push_bounds(
    buf: &mut Vec<u8>,
    side: Side,
    key: &[u8],
    from: i64,
    to: i64,
) -> (Range<usize>, Range<usize>) {
    let a = buf.len();
    push_prefix(buf, side, key);
    let prefix = a..buf.len();
    buf.extend_from_slice(&time_bytes(from));
    let b = buf.len();
    buf.extend_from_within(prefix);
    match to.checked_add(1) {
        Some(t) => buf.extend_from_slice(&time_bytes(t)),
        // Up to the end of the prefix: one past its last byte string.
        None => buf.push(0xff),
    }
    (a..b, b..buf.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_keys_sort_by_side_key_then_time() {
        let a = row_key(Side::Left, b"k", -5, 0, 1);
        let b = row_key(Side::Left, b"k", 3, 0, 0);
        let c = row_key(Side::Left, b"k", 3, 1, 0);
        let d = row_key(Side::Left, b"kk", -100, 0, 0);
        let e = row_key(Side::Right, b"k", -100, 0, 0);
        assert!(a < b && b < c && c < d && d < e);
        assert_eq!(parse(&a), Some((Side::Left, &b"k"[..], -5)));
        assert_eq!(parse(&e), Some((Side::Right, &b"k"[..], -100)));
        assert_eq!(parse(b"Wxyz"), None);
        assert_eq!(decode(&encode(true, b"v")), (true, &b"v"[..]));
    }
}
