//! The filter-and-flag as a newcomer first writes it: each record decoded
//! into a `serde_json::Value`, changed, encoded again (the project needs
//! `serde_json = "1"` in its dependencies).

use weir_guest::{Output, Record, RecordError};

fn filter_and_flag(record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    let mut order: serde_json::Value =
        serde_json::from_slice(record.value()).map_err(|e| RecordError::bad(e.to_string()))?;
    let Some(amount) = order["amount"].as_f64() else {
        return Err(RecordError::bad("amount is not a number"));
    };
    if amount < 10.0 {
        return Ok(());
    }
    if amount >= 1000.0 {
        order["big"] = serde_json::Value::Bool(true);
    }
    out.emit(serde_json::to_vec(&order).map_err(|e| RecordError::bad(e.to_string()))?);
    Ok(())
}

weir_guest::flat_map!(filter_and_flag);
