use super::*;

fn progress(run: &str, input: u64, fuel: u64, counter: u64) -> Progress {
    let mut p: Progress = serde_json::from_value(serde_json::json!({
        "id": "q", "runId": run, "batchId": 0, "timestamp": 0,
        "numInputRows": input, "inputRowsPerSecond": 0.0,
        "processedRowsPerSecond": 0.0, "numRejectedRows": 3, "lag": 7,
        "durationMs": {"latestOffset": 0, "walCommit": 0, "addBatch": 0,
                       "commit": 0, "triggerExecution": 12},
        "sources": [], "sink": {"description": "s", "numOutputRows": input},
        "eventTime": {"watermark": "2026-01-01T00:00:10.000Z"},
    }))
    .unwrap();
    p.rejected_rows_by_kind.insert("trap".into(), 3);
    p.transform_metrics.fuel_consumed = fuel;
    p.transform_metrics.counters.insert("seen".into(), counter);
    p
}

fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn totals_from_the_engine_become_counters_across_runs() {
    let m = Metrics::new();
    let l = PipelineLabels {
        tenant: "acme".into(),
        pipeline: "p".into(),
    };
    m.record(&l, &progress("r1", 10, 100, 5));
    m.record(&l, &progress("r1", 10, 150, 8));
    // A restart: the engine's totals start over.
    m.record(&l, &progress("r2", 1, 20, 2));
    let text = m.encode(None);
    let p = r#"{tenant="acme",pipeline="p"}"#;
    assert_eq!(
        sample(&text, &format!("weir_input_rows_total{p}")),
        Some(21.0)
    );
    assert_eq!(
        sample(&text, &format!("weir_guest_fuel_total{p}")),
        Some(170.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"weir_guest_counter_total{tenant="acme",pipeline="p",name="seen"}"#
        ),
        Some(10.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"weir_rejected_rows_total{tenant="acme",pipeline="p",kind="trap"}"#
        ),
        Some(9.0)
    );
    assert_eq!(sample(&text, &format!("weir_lag_records{p}")), Some(7.0));
    assert_eq!(
        sample(&text, &format!("weir_watermark_seconds{p}")),
        Some(1_767_225_610.0)
    );
    assert_eq!(
        sample(&text, &format!("weir_batch_duration_seconds_count{p}")),
        Some(3.0)
    );
    assert!(m.encode(Some("other")).lines().all(|l| l.starts_with('#')));
    m.forget(&l);
    assert!(!m.encode(None).contains("acme"));
}

#[test]
fn the_summary_reads_the_exposed_series_and_creates_none() {
    let m = Metrics::new();
    let l = PipelineLabels {
        tenant: "acme".into(),
        pipeline: "p".into(),
    };
    assert_eq!(m.summary(&l), serde_json::json!({"rejected-rows": {}}));
    assert!(!m.encode(None).contains("acme"), "summary made series");
    m.record(&l, &progress("r1", 10, 100, 5));
    m.record(&l, &progress("r1", 4, 150, 8));
    m.restarted(&l);
    let s = m.summary(&l);
    let text = m.encode(None);
    let p = r#"{tenant="acme",pipeline="p"}"#;
    let exposed = |name: &str| sample(&text, &format!("{name}{p}")).unwrap();
    assert_eq!(s["input-rows"], exposed("weir_input_rows_total") as u64);
    assert_eq!(s["input-rows"], 14);
    assert_eq!(s["output-rows"], exposed("weir_output_rows_total") as u64);
    assert_eq!(s["lag"], exposed("weir_lag_records") as i64);
    assert_eq!(s["restarts"], 1);
    assert_eq!(s["watermark-seconds"], exposed("weir_watermark_seconds"));
    assert_eq!(s["rejected-rows"]["trap"], 6);
}
