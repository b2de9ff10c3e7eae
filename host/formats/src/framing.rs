//! Confluent's wire framing: byte 0 is the magic 0, bytes 1..5 the schema
//! id (big-endian), the rest the encoded record.

use crate::RecordFault;

/// The magic byte Confluent's serializers start every framed value with.
pub const MAGIC: u8 = 0;

/// A framed value split into its schema id and payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framed<'a> {
    pub schema_id: u32,
    pub payload: &'a [u8],
}

/// Split `value` into schema id and payload.
pub fn unframe(value: &[u8]) -> Result<Framed<'_>, RecordFault> {
    match value {
        [MAGIC, a, b, c, d, payload @ ..] => Ok(Framed {
            schema_id: u32::from_be_bytes([*a, *b, *c, *d]),
            payload,
        }),
        [first, ..] if *first != MAGIC => Err(RecordFault(format!(
            "value does not start with the schema registry's magic byte 0 (found {first:#04x}): not written by a registry-aware serializer"
        ))),
        _ => Err(RecordFault(format!(
            "value is {} bytes, shorter than the 5-byte schema registry header",
            value.len()
        ))),
    }
}

/// Append the header for `schema_id` to `out`; the payload follows it.
pub fn frame_header(schema_id: u32, out: &mut Vec<u8>) {
    out.push(MAGIC);
    out.extend_from_slice(&schema_id.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_short_or_foreign_values_are_faults() {
        let mut v = Vec::new();
        frame_header(0x0102_0304, &mut v);
        v.extend_from_slice(b"xy");
        assert_eq!(
            unframe(&v).unwrap(),
            Framed {
                schema_id: 0x0102_0304,
                payload: b"xy"
            }
        );
        assert!(unframe(&[0, 0, 0]).unwrap_err().0.contains("shorter"));
        assert!(unframe(b"{\"a\":1}").unwrap_err().0.contains("magic byte"));
        assert!(unframe(&[]).unwrap_err().0.contains("0 bytes"));
    }
}
