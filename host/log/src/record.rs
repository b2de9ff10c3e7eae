//! On-disk record framing: `body-len u32 LE, crc32(body) u32 LE, body`, with
//! body = `timestamp i64, key-len i32 (-1: none), key, value-len u32
//! (`u32::MAX`: no value, a tombstone), value, headers-len u32, headers`
//! (headers in the batch encoding). The CRC lets a reader detect a torn or
//! corrupt tail and stop there.

use weir_engine::RecordRef;

pub(crate) const FRAME_HEADER: usize = 8;
/// Largest record body accepted, so a corrupt length cannot make us
/// allocate gigabytes.
pub(crate) const MAX_BODY: usize = 256 << 20;
/// The value length of a record without a value. Segments written before
/// tombstones existed never hold it, so they read as before.
const NO_VALUE: u32 = u32::MAX;

/// Append one framed record to `out`.
pub(crate) fn encode(out: &mut Vec<u8>, r: &RecordRef<'_>) {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    out.extend_from_slice(&r.timestamp.to_le_bytes());
    match r.key {
        Some(k) => {
            out.extend_from_slice(&(k.len() as i32).to_le_bytes());
            out.extend_from_slice(k);
        }
        None => out.extend_from_slice(&(-1i32).to_le_bytes()),
    }
    match r.value_opt() {
        Some(v) => {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        None => out.extend_from_slice(&NO_VALUE.to_le_bytes()),
    }
    out.extend_from_slice(&(r.headers.len() as u32).to_le_bytes());
    out.extend_from_slice(r.headers);
    let body = &out[start + FRAME_HEADER..];
    let len = body.len() as u32;
    let crc = crc32fast::hash(body);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// A decoded record body, borrowing from the buffer.
pub(crate) struct Decoded<'a> {
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    /// `None`: the record has no value (a tombstone).
    pub value: Option<&'a [u8]>,
    pub headers: &'a [u8],
}

/// Length of the frame starting at `buf`, if a complete, CRC-valid frame is
/// there; `None` marks a torn or corrupt tail.
pub(crate) fn frame_len(buf: &[u8]) -> Option<usize> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(buf.get(4..8)?.try_into().ok()?);
    if len > MAX_BODY {
        return None;
    }
    let body = buf.get(FRAME_HEADER..FRAME_HEADER + len)?;
    (crc32fast::hash(body) == crc).then_some(FRAME_HEADER + len)
}

/// Decode a frame already checked by [`frame_len`].
pub(crate) fn decode(frame: &[u8]) -> Option<Decoded<'_>> {
    let body = &frame[FRAME_HEADER..];
    let timestamp = i64::from_le_bytes(body.get(..8)?.try_into().ok()?);
    let key_len = i32::from_le_bytes(body.get(8..12)?.try_into().ok()?);
    let mut pos = 12;
    let key = if key_len < 0 {
        None
    } else {
        let k = body.get(pos..pos + key_len as usize)?;
        pos += key_len as usize;
        Some(k)
    };
    let value_len = u32::from_le_bytes(body.get(pos..pos + 4)?.try_into().ok()?);
    pos += 4;
    let value = if value_len == NO_VALUE {
        None
    } else {
        let v = body.get(pos..pos + value_len as usize)?;
        pos += value_len as usize;
        Some(v)
    };
    let headers_len = u32::from_le_bytes(body.get(pos..pos + 4)?.try_into().ok()?) as usize;
    pos += 4;
    let headers = body.get(pos..pos + headers_len)?;
    Some(Decoded {
        timestamp,
        key,
        value,
        headers,
    })
}
