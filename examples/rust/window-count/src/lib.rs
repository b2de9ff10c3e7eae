//! Windowed count per key: counts JSON records per key in event-time
//! windows, kept in checkpointed state. In append mode each window's count
//! is emitted once, when the watermark passes the window's end.
//!
//! Config: `key-field` (default "key"), `size` (default "10s"), `slide`
//! (sliding windows when set; tumbling otherwise).
//! Output: `{"key":"user-1","start":0,"end":10000,"count":42}` keyed by key.
//!
//! `weir new --lang rust --template window NAME` starts a project from
//! this file.

use std::time::Duration;

use weir_guest::window::{Count, Windowed, WindowedTransform, Windows};
use weir_guest::{Config, json};

pub struct WindowCount;

impl WindowedTransform for WindowCount {
    type Agg = Count;

    fn build(config: &Config) -> Result<Windowed<Count>, String> {
        config.only(&["key-field", "size", "slide"])?;
        let size = config.duration("size", Duration::from_secs(10))?;
        let windows = match config.get("slide") {
            None => Windowed::tumbling(size, Count),
            Some(_) => Windowed::sliding(size, config.duration("slide", size)?, Count),
        };
        let field = config.get("key-field").unwrap_or("key").to_string();
        Ok(windows.key_by(move |r| Ok(json::field(r.value(), &field)?.to_key())))
    }
}

weir_guest::export!(Windows<WindowCount>);

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::Record;
    use weir_guest::testing::{self, fire_timers, init, run};

    #[test]
    fn counts_per_key_per_window() {
        testing::reset_state();
        let mut t: Windows<WindowCount> = init(&[("size", "10ms")]).unwrap();
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
        assert!(init::<Windows<WindowCount>>(&[("size", "ten")]).is_err());
    }
}
