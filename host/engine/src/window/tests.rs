//! The host window operator through the micro-batch engine, against a
//! reference computed here, over the same input split several ways.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::{Aggregation, WindowSpec};
use crate::checkpoint::LocalCheckpointStore;
use crate::exchange::{Partitioning, StateKey};
use crate::state::{EventTimeOptions, LatePolicy, OutputMode, StatefulOptions};
use crate::testing::{MemorySink, MemoryTopic};
use crate::{ErrorPolicy, MicroBatchQuery, QueryOptions, Trigger};

/// `(key, event time, amount)` of record `i` of partition `p`: times
/// rising with `i` but out of order, amounts mixed in sign.
fn event(p: usize, i: usize) -> (String, i64, i64) {
    let key = format!("k{}", (i * 7 + p * 3) % 5);
    let time = (i as i64) * 3 + ((i * 13 + p * 5) % 11) as i64 - 20;
    let amount = ((i * 31 + p * 17) % 23) as i64 - 9;
    (key, time, amount)
}

fn topic(partitions: usize, n: usize) -> MemoryTopic {
    MemoryTopic::with(
        (0..partitions)
            .map(|p| {
                (0..n)
                    .map(|i| {
                        let (k, t, a) = event(p, i);
                        format!(r#"{{"user":{{"id":"{k}"}},"ts":{t},"amount":{a}}}"#)
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Every window's row, as the operator writes it, computed directly.
fn reference(spec: &WindowSpec, partitions: usize, n: usize) -> Vec<String> {
    let mut windows: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    for p in 0..partitions {
        for i in 0..n {
            let (k, t, a) = event(p, i);
            let mut start = t - t.rem_euclid(spec.slide_ms);
            while start + spec.size_ms > t {
                windows.entry((k.clone(), start)).or_default().push(a);
                start -= spec.slide_ms;
            }
        }
    }
    let mut rows: Vec<String> = windows
        .into_iter()
        .map(|((k, start), xs)| {
            let value = match spec.aggregate {
                Aggregation::Count => xs.len().to_string(),
                Aggregation::Sum(_) => xs.iter().sum::<i64>().to_string(),
                Aggregation::Min(_) => xs.iter().min().unwrap().to_string(),
                Aggregation::Max(_) => xs.iter().max().unwrap().to_string(),
                Aggregation::Avg(_) => {
                    format!("{:?}", xs.iter().sum::<i64>() as f64 / xs.len() as f64)
                }
            };
            format!(
                r#"{{"key":"{k}","start":{start},"end":{},"{}":{value}}}"#,
                start + spec.size_ms,
                spec.aggregate.name()
            )
        })
        .collect();
    rows.sort();
    rows
}

/// A window spec with the default state bound.
fn spec(size_ms: i64, slide_ms: i64, aggregate: Aggregation) -> WindowSpec {
    WindowSpec {
        size_ms,
        slide_ms,
        aggregate,
        max_state_bytes: 1 << 30,
    }
}

struct Split {
    /// The watermark delay: with one partition longer than its disorder
    /// (20 ms), so windows close as the watermark moves; with several,
    /// longer than all event times (the harness reads one partition to its
    /// end before the next, and the watermark follows the largest time
    /// seen), so no record is late however the input is split.
    delay_ms: u64,
    partitions: usize,
    per_trigger: u64,
    state_partitions: u32,
    /// Stop after every batch and start again from the checkpoint.
    restart: bool,
}

fn run(
    spec: &WindowSpec,
    split: &Split,
    n: usize,
    mode: OutputMode,
    policy: ErrorPolicy,
) -> Result<Vec<Vec<String>>, String> {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::default();
    let topic = topic(split.partitions, n);
    // Restarting: stop after every batch until a run reads nothing, then
    // one run to the end (the end of input closes the last windows).
    let mut stop_each = split.restart;
    loop {
        let state = StatefulOptions {
            stateful: true,
            output_mode: mode,
            event_time: Some(EventTimeOptions {
                field: Some("ts".into()),
                source_fields: Default::default(),
                delay: Duration::from_millis(split.delay_ms),
                late: LatePolicy::Drop,
                idle_timeout: None,
                rule: Default::default(),
            }),
            partitioning: Partitioning {
                key: StateKey::Field(vec!["user".into(), "id".into()]),
                partitions: split.state_partitions,
                ..Partitioning::default()
            },
            ..Default::default()
        };
        let mut q = MicroBatchQuery::new(
            Arc::new(LocalCheckpointStore::open(dir.path()).unwrap()),
            vec![Box::new(
                topic
                    .source("events")
                    .max_records_per_trigger(split.per_trigger),
            )],
            spec.clone().factory(None),
            vec![(None, Box::new(sink.clone()))],
            QueryOptions {
                trigger: Trigger::AvailableNow,
                state,
                error_policy: policy.clone(),
                end_of_input_watermark: true,
                ..QueryOptions::default()
            },
        )
        .unwrap();
        let stop = q.stop_handle();
        let summary = q
            .run(&mut |_| {
                if stop_each {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed)
                }
            })
            .map_err(|e| e.to_string())?;
        if !stop_each {
            break;
        }
        stop_each = summary.input_rows > 0;
    }
    Ok(sink.batches().into_iter().map(|b| b.values).collect())
}

fn splits() -> Vec<Split> {
    let split = |delay_ms, partitions, per_trigger, state_partitions, restart| Split {
        delay_ms,
        partitions,
        per_trigger,
        state_partitions,
        restart,
    };
    vec![
        split(40, 1, 100_000, 1, false),
        split(40, 1, 9, 2, true),
        split(2_000, 3, 7, 3, false),
        split(2_000, 2, 50, 2, true),
    ]
}

fn sorted(batches: Vec<Vec<String>>) -> Vec<String> {
    let mut rows: Vec<String> = batches.into_iter().flatten().collect();
    rows.sort();
    rows
}

#[test]
fn every_window_once_in_append_mode_however_the_input_is_split() {
    let field = || vec!["amount".to_string()];
    for spec in [
        spec(30, 30, Aggregation::Count),
        spec(40, 15, Aggregation::Sum(field())),
        spec(25, 25, Aggregation::Min(field())),
        spec(25, 10, Aggregation::Max(field())),
        spec(50, 50, Aggregation::Avg(field())),
    ] {
        for split in splits() {
            let n = 120;
            let got = run(&spec, &split, n, OutputMode::Append, ErrorPolicy::Fail).unwrap();
            assert_eq!(
                sorted(got),
                reference(&spec, split.partitions, n),
                "{spec:?}, {} partitions, {} a trigger, restart {}",
                split.partitions,
                split.per_trigger,
                split.restart
            );
        }
    }
}

#[test]
fn update_mode_ends_with_every_windows_final_value() {
    let spec = spec(30, 10, Aggregation::Sum(vec!["amount".into()]));
    for split in splits() {
        let got = run(&spec, &split, 90, OutputMode::Update, ErrorPolicy::Fail).unwrap();
        // The last row of each window is its value over all its records.
        let mut last: BTreeMap<String, String> = BTreeMap::new();
        for row in got.into_iter().flatten() {
            let v: serde_json::Value = serde_json::from_str(&row).unwrap();
            last.insert(format!("{}/{}", v["key"], v["start"]), row);
        }
        let mut rows: Vec<String> = last.into_values().collect();
        rows.sort();
        assert_eq!(rows, reference(&spec, split.partitions, 90));
    }
}

#[test]
fn a_record_without_the_number_goes_to_the_error_policy_with_the_field_named() {
    let spec = spec(30, 30, Aggregation::Sum(vec!["price".into()]));
    let split = Split {
        delay_ms: 40,
        partitions: 1,
        per_trigger: 10,
        state_partitions: 1,
        restart: false,
    };
    let err = run(&spec, &split, 5, OutputMode::Append, ErrorPolicy::Fail).unwrap_err();
    assert!(err.contains("field `price` is missing"), "{err}");
    // Skipped, every window is empty: no rows, and the query goes on.
    let rows = run(&spec, &split, 5, OutputMode::Append, ErrorPolicy::Skip).unwrap();
    assert_eq!(sorted(rows), Vec::<String>::new());
}

#[test]
fn state_beyond_its_bound_stops_the_query_with_the_setting_named() {
    let spec = WindowSpec {
        size_ms: 30,
        slide_ms: 30,
        aggregate: Aggregation::Count,
        max_state_bytes: 1_000,
    };
    let split = Split {
        delay_ms: 2_000,
        partitions: 1,
        per_trigger: 100_000,
        state_partitions: 1,
        restart: false,
    };
    let err = run(&spec, &split, 120, OutputMode::Append, ErrorPolicy::Skip).unwrap_err();
    assert!(err.contains("over window.max-state = 1000"), "{err}");
}
