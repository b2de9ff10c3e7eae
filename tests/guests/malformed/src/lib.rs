//! Implements the raw export with broken batch encodings, chosen by config
//! `mode`: `ends-past-data`, `ends-decreasing`, `origin-out-of-range`,
//! `route-out-of-range`, `count-mismatch`, `bad-reject-index`,
//! `header-ends-past-list`.

use std::cell::RefCell;

use weir_guest::bindings::exports::weir::transform::transform::Guest;
use weir_guest::bindings::exports::weir::transform::record_transform::Guest as RecordGuest;
use weir_guest::wit::{
    BadRecord, Batch, BatchError, OutputBatch, OutputRecord, Record, RecordError,
};

thread_local! {
    static MODE: RefCell<String> = const { RefCell::new(String::new()) };
}

struct Malformed;

impl Guest for Malformed {
    fn init(config: Vec<(String, String)>) -> Result<(), String> {
        let mode = config
            .into_iter()
            .find(|(k, _)| k == "mode")
            .map(|(_, v)| v)
            .ok_or("missing config key `mode`")?;
        MODE.with(|m| *m.borrow_mut() = mode);
        Ok(())
    }

    fn process_batch(input: Batch) -> Result<OutputBatch, BatchError> {
        let n = input.value_ends.len() as u32;
        let mut out = OutputBatch {
            values: input.values,
            value_ends: input.value_ends,
            has_value: vec![],
            keys: vec![],
            key_ends: vec![],
            has_key: vec![],
            headers: vec![],
            header_ends: vec![],
            timestamps: vec![],
            origins: vec![],
            outputs: vec![],
            routes: vec![],
            rejected: vec![],
        };
        match MODE.with(|m| m.borrow().clone()).as_str() {
            "ends-past-data" => out.value_ends.push(u32::MAX),
            "ends-decreasing" => out.value_ends.insert(0, 5),
            "origin-out-of-range" => out.origins = (0..n).map(|i| i + n).collect(),
            "route-out-of-range" => out.routes = vec![7; n as usize],
            "count-mismatch" => out.timestamps = vec![0; n as usize + 3],
            "bad-reject-index" => out.rejected.push(BadRecord {
                index: n + 10,
                reason: "x".into(),
            }),
            "header-ends-past-list" => out.header_ends = vec![2; n as usize],
            other => return Err(BatchError::Broken(format!("unknown mode {other}"))),
        }
        Ok(out)
    }
}

impl RecordGuest for Malformed {
    fn process_record(_: Record) -> Result<Vec<OutputRecord>, RecordError> {
        Err(RecordError::Broken(
            "per-record path not implemented by this test guest".into(),
        ))
    }
}

// The SDK's bindings are for the stateful world, so the timer export must
// exist; this guest registers no timers, so it is never called.
impl weir_guest::bindings::exports::weir::transform::timer_handler::Guest for Malformed {
    fn on_timers(
        _: weir_guest::bindings::exports::weir::transform::timer_handler::FiredTimers,
    ) -> Result<OutputBatch, BatchError> {
        Err(BatchError::Broken(
            "this test guest registers no timers".into(),
        ))
    }
}

weir_guest::bindings::__export_transformer!(Malformed with_types_in weir_guest::bindings);
