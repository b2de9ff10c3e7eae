//! Uppercases each record's value (ASCII); key, headers and timestamp pass
//! through, and so do records without a value (tombstones). Writes straight
//! into the output buffer in one pass, so the loop allocates nothing per
//! record and vectorises with simd128.

use weir_guest::{Output, Record, RecordError};

fn uppercase(record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    if !record.has_value() {
        out.forward();
        return Ok(());
    }
    out.emit_with(|buf| buf.extend(record.value().iter().map(u8::to_ascii_uppercase)));
    Ok(())
}

weir_guest::flat_map!(uppercase);

#[cfg(test)]
mod tests {
    #[test]
    fn uppercases_values_and_keeps_non_ascii() {
        let run =
            weir_guest::testing::flat_map(super::uppercase, &["abc", "Hello, wörld"]).unwrap();
        assert_eq!(run.values(), vec!["ABC", "HELLO, WöRLD"]);
    }
}
