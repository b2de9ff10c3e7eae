//! Drops orders under 10, flags those of 1000 and more with `"big": true`;
//! a record that is not a JSON object with a number `amount` is refused.
//! The way the README teaches: read the one field with
//! `weir_guest::json::field` (no document is built), emit the record's
//! own bytes, or them with the flag spliced in before the closing brace.
//! Build: copy over src/lib.rs of a `weir new --lang rust` project, then
//! `weir build`. `naive.rs` beside it is the same with serde_json values.

use weir_guest::json::{self, Field};
use weir_guest::{Output, Record, RecordError};

fn filter_and_flag(record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    let amount = match json::field(record.value(), "amount")? {
        Field::Int(i) => i as f64,
        Field::Float(f) => f,
        _ => return Err(RecordError::bad("amount is not a number")),
    };
    if amount < 10.0 {
        return Ok(());
    }
    let value = record.value();
    if amount >= 1000.0 {
        // The object's last byte is its `}` (json::field checked it).
        let end = value.iter().rposition(|&b| b == b'}').unwrap_or(value.len());
        out.emit_with(|buf| {
            buf.extend_from_slice(&value[..end]);
            buf.extend_from_slice(br#","big":true}"#);
        });
    } else {
        out.emit(value);
    }
    Ok(())
}

weir_guest::flat_map!(filter_and_flag);
