//! A candidate for the replay tests: uppercases like the `uppercase`
//! example, except that a value ending in `999` (one record in a thousand
//! of `record <n>` inputs) also gets a `!`, so a replay must report
//! exactly those records as changed.

use weir_guest::{Output, Record, RecordError};

fn uppercase(record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    if !record.has_value() {
        out.forward();
        return Ok(());
    }
    let v = record.value();
    out.emit_with(|buf| {
        buf.extend(v.iter().map(u8::to_ascii_uppercase));
        if v.ends_with(b"999") {
            buf.push(b'!');
        }
    });
    Ok(())
}

weir_guest::flat_map!(uppercase);
