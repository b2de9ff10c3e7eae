use std::time::Duration;

use super::*;
use crate::testing::{self, fire_timers, reset_state, run, set_output_mode, set_watermark};
use crate::{Config, Transform};

struct Counts(Windowed<Count>);

impl Transform for Counts {
    fn init(_: &Config) -> Result<Self, String> {
        Ok(Counts(Windowed::tumbling(Duration::from_millis(10), Count)))
    }
    fn process(&mut self, _: &Record<'_>, _: &mut Output<'_, '_>) -> Result<(), RecordError> {
        unreachable!("process_batch is overridden")
    }
    fn process_batch(&mut self, b: &Batch<'_>, out: &mut BatchOutput) -> Result<(), String> {
        self.0.process_batch(b, out)
    }
    fn on_timer(&mut self, t: &Timer<'_>, out: &mut Output<'_, '_>) -> Result<(), String> {
        self.0.on_timer(t, out);
        Ok(())
    }
}

fn recs(data: &[(&'static str, i64)]) -> Vec<Record<'static>> {
    data.iter()
        .map(|(k, ts)| {
            Record::new(b"x")
                .with_key(Some(k.as_bytes()))
                .with_timestamp(*ts)
        })
        .collect()
}

#[test]
fn tumbling_counts_are_emitted_once_when_the_watermark_passes() {
    reset_state();
    let mut t = Counts::init(&Config::default()).unwrap();
    let out = run(&mut t, &recs(&[("a", 1), ("b", 3), ("a", 9), ("a", 12)])).unwrap();
    assert!(
        out.emitted.is_empty(),
        "append mode waits for the watermark"
    );
    set_watermark(Some(9));
    assert!(fire_timers(&mut t).unwrap().emitted.is_empty());
    set_watermark(Some(10));
    let fired = fire_timers(&mut t).unwrap();
    assert_eq!(
        fired.values(),
        vec![
            r#"{"key":"a","start":0,"end":10,"count":2}"#,
            r#"{"key":"b","start":0,"end":10,"count":1}"#
        ]
    );
    assert_eq!(fired.emitted[0].timestamp, 9);
    assert_eq!(fired.emitted[0].key.as_deref(), Some(&b"a"[..]));
    assert_eq!(testing::state_len(), 1, "closed windows leave state");
}

#[test]
fn sliding_windows_cover_each_record_several_times() {
    reset_state();
    let mut t = Counts(Windowed::sliding(
        Duration::from_millis(10),
        Duration::from_millis(5),
        Count,
    ));
    run(&mut t, &recs(&[("k", 7)])).unwrap();
    set_watermark(Some(100));
    let v = fire_timers(&mut t).unwrap();
    assert_eq!(
        v.values(),
        vec![
            r#"{"key":"k","start":0,"end":10,"count":1}"#,
            r#"{"key":"k","start":5,"end":15,"count":1}"#
        ]
    );
}

#[test]
fn sessions_merge_when_a_record_bridges_them() {
    reset_state();
    let mut t = Counts(Windowed::session(Duration::from_millis(5), Count));
    run(&mut t, &recs(&[("u", 0), ("u", 20), ("v", 1)])).unwrap();
    run(&mut t, &recs(&[("u", 3), ("u", 8)])).unwrap();
    // u: [0,13) with 3 events, [20,25) with 1; v: [1,6).
    set_watermark(Some(14));
    let v = fire_timers(&mut t).unwrap();
    assert_eq!(
        v.values(),
        vec![
            r#"{"key":"v","start":1,"end":6,"count":1}"#,
            r#"{"key":"u","start":0,"end":13,"count":3}"#
        ]
    );
    set_watermark(Some(30));
    let v = fire_timers(&mut t).unwrap();
    assert_eq!(
        v.values(),
        vec![r#"{"key":"u","start":20,"end":25,"count":1}"#]
    );
    assert_eq!(testing::state_len(), 0);
}

#[test]
fn update_mode_emits_changed_windows_per_batch_and_complete_mode_everything() {
    reset_state();
    set_output_mode(OutputMode::Update);
    let mut t = Counts::init(&Config::default()).unwrap();
    let out = run(&mut t, &recs(&[("a", 1), ("a", 2), ("b", 3)])).unwrap();
    assert_eq!(
        out.values(),
        vec![
            r#"{"key":"a","start":0,"end":10,"count":2}"#,
            r#"{"key":"b","start":0,"end":10,"count":1}"#
        ]
    );
    assert_eq!(
        out.emitted[0].origin, 1,
        "emitted for the last record that changed it"
    );
    let out = run(&mut t, &recs(&[("b", 4)])).unwrap();
    assert_eq!(
        out.values(),
        vec![r#"{"key":"b","start":0,"end":10,"count":2}"#]
    );
    set_watermark(Some(10));
    assert!(
        fire_timers(&mut t).unwrap().emitted.is_empty(),
        "update mode evicts silently"
    );
    assert_eq!(testing::state_len(), 0);

    reset_state();
    set_output_mode(OutputMode::Complete);
    let mut t = Counts::init(&Config::default()).unwrap();
    run(&mut t, &recs(&[("a", 1), ("b", 13)])).unwrap();
    let out = run(&mut t, &recs(&[("a", 2)])).unwrap();
    assert_eq!(out.values().len(), 2, "complete mode re-emits every window");
    assert!(testing::timers().is_empty(), "complete mode never evicts");
}

#[test]
fn append_mode_without_event_time_is_refused() {
    reset_state();
    testing::set_event_time(false);
    let mut t = Counts::init(&Config::default()).unwrap();
    let err = run(&mut t, &recs(&[("a", 1)])).unwrap_err();
    assert!(err.contains("needs an [event-time] section"), "{err}");
    testing::set_event_time(true);
}

#[test]
fn records_without_a_key_are_bad_records() {
    reset_state();
    let mut t = Counts::init(&Config::default()).unwrap();
    let out = run(&mut t, &[Record::new(b"x")]).unwrap();
    assert_eq!(
        out.rejected,
        vec![(0, "record has no key to window by".to_string())]
    );
}
