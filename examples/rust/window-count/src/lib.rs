//! Windowed count per key: counts JSON records per key in event-time
//! windows, kept in checkpointed state. In append mode each window's count
//! is emitted once, when the watermark passes the window's end.
//!
//! Config: `key-field` (default "key"), `size` (default "10s"), `slide`
//! (sliding windows when set; tumbling otherwise).
//! Output: `{"key":"user-1","start":0,"end":10000,"count":42}` keyed by key.

use std::time::Duration;

use weir_guest::state::Timer;
use weir_guest::window::{Count, Windowed};
use weir_guest::{Batch, BatchOutput, Config, Output, Record, RecordError, Transform, json};

pub struct WindowCount(Windowed<Count>);

impl Transform for WindowCount {
    fn init(config: &Config) -> Result<Self, String> {
        config.only(&["key-field", "size", "slide"])?;
        let size = config.duration("size", Duration::from_secs(10))?;
        let windows = match config.get("slide") {
            None => Windowed::tumbling(size, Count),
            Some(_) => Windowed::sliding(size, config.duration("slide", size)?, Count),
        };
        let field = config.get("key-field").unwrap_or("key").to_string();
        Ok(WindowCount(windows.key_by(move |r| {
            Ok(json::field(r.value(), &field)?.to_key())
        })))
    }

    fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        self.0.process(record, out)
    }

    fn process_batch(&mut self, batch: &Batch<'_>, out: &mut BatchOutput) -> Result<(), String> {
        self.0.process_batch(batch, out)
    }

    fn on_timer(&mut self, timer: &Timer<'_>, out: &mut Output<'_, '_>) -> Result<(), String> {
        self.0.on_timer(timer, out);
        Ok(())
    }
}

weir_guest::export!(WindowCount);

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::testing::{self, fire_timers, init, run};

    #[test]
    fn counts_per_key_per_window() {
        testing::reset_state();
        let mut t: WindowCount = init(&[("size", "10ms")]).unwrap();
        let recs: Vec<_> = [("a", 1), ("b", 2), ("a", 5), ("a", 11)]
            .iter()
            .map(|(k, ts)| {
                let v: &'static str =
                    Box::leak(format!(r#"{{"key":"{k}","ts":{ts}}}"#).into_boxed_str());
                Record::new(v.as_bytes()).with_timestamp(*ts)
            })
            .collect();
        run(&mut t, &recs).unwrap();
        testing::set_watermark(Some(10));
        let out = fire_timers(&mut t).unwrap();
        assert_eq!(
            out.values(),
            vec![
                r#"{"key":"a","start":0,"end":10,"count":2}"#,
                r#"{"key":"b","start":0,"end":10,"count":1}"#
            ]
        );
        assert!(init::<WindowCount>(&[("size", "ten")]).is_err());
    }
}
