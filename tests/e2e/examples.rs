//! Every example guest through the host, on both call paths.

use weir_engine::{RecordBatch, Transform, TransformOutput};
use weir_runtime::{CallMode, Limits, WasmTransform};

use crate::testkit::{batch, guest, runtime, values};

fn run(
    name: &str,
    config: &[(&str, &str)],
    input: &RecordBatch,
    mode: CallMode,
) -> TransformOutput {
    let rt = runtime();
    let c = rt.load(&guest(name), &[]).expect("load");
    let config = config
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut t = WasmTransform::new(&c, config, Limits::default(), name, mode).expect("init");
    t.process_batch(input).expect("process")
}

fn both_modes(name: &str, config: &[(&str, &str)], input: &RecordBatch) -> TransformOutput {
    let a = run(name, config, input, CallMode::Batch);
    let b = run(name, config, input, CallMode::PerRecord);
    assert_eq!(
        values(&a, input),
        values(&b, input),
        "{name}: batch and per-record disagree"
    );
    assert_eq!(
        a.rejected, b.rejected,
        "{name}: rejections differ by call path"
    );
    a
}

#[test]
fn uppercase_keeps_keys_headers_and_timestamps() {
    let mut input = RecordBatch::new(3);
    input.push_with_headers(Some(b"k1"), b"hello", &[("trace", b"t1")], 11, 7);
    input.push(None, b"World 42", 12, 8);
    for mode in [CallMode::Batch, CallMode::PerRecord] {
        let out = run("uppercase", &[], &input, mode);
        let got: Vec<_> = out.batch.iter(&input).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].value, b"HELLO");
        assert_eq!(got[0].key, Some(&b"k1"[..]));
        assert_eq!(
            got[0].headers().collect::<Vec<_>>(),
            vec![("trace", &b"t1"[..])]
        );
        assert_eq!(got[0].timestamp, 11);
        assert_eq!(got[1].value, b"WORLD 42");
        assert_eq!(got[1].key, None);
        assert_eq!(got[1].timestamp, 12);
        assert_eq!(got[1].origin, 1);
    }
}

#[test]
fn uppercase_handles_empty_and_large_batches() {
    let empty = batch(&[]);
    assert!(both_modes("uppercase", &[], &empty).batch.is_empty());
    let long = "x".repeat(10_000);
    let many: Vec<&str> = (0..5000)
        .map(|i| if i % 2 == 0 { "a" } else { long.as_str() })
        .collect();
    let input = batch(&many);
    let out = run("uppercase", &[], &input, CallMode::Batch);
    assert_eq!(out.batch.len(), 5000);
    assert_eq!(
        out.batch.get(&input, 1).value,
        long.to_uppercase().as_bytes()
    );
}

#[test]
fn json_filter_drops_failing_records_and_rejects_malformed() {
    let input = batch(&[r#"{"age":17}"#, "{oops", r#"{"age":21}"#]);
    let out = both_modes(
        "json_filter",
        &[("field", "age"), ("op", "ge"), ("value", "18")],
        &input,
    );
    assert_eq!(values(&out, &input), vec![r#"{"age":21}"#]);
    assert_eq!(out.rejected.len(), 1);
    assert_eq!(out.rejected[0].index, 1);
    assert!(
        out.rejected[0].reason.contains("not JSON"),
        "{}",
        out.rejected[0].reason
    );
}

#[test]
fn json_enrich_reshapes() {
    let input = batch(&[r#"{"id":1,"value":"abc","pw":"x"}"#]);
    let out = both_modes(
        "json_enrich",
        &[
            ("drop", "pw"),
            ("uppercase", "value"),
            ("add-source", "true"),
        ],
        &input,
    );
    assert_eq!(
        values(&out, &input),
        vec![r#"{"id":1,"value":"ABC","_source":{"partition":0,"offset":100,"timestamp":1000}}"#]
    );
}

#[test]
fn router_sends_records_to_named_outputs() {
    let input = batch(&[r#"{"region":"eu"}"#, r#"{"region":"us"}"#, r#"{"x":1}"#]);
    for mode in [CallMode::Batch, CallMode::PerRecord] {
        let out = run(
            "router",
            &[("field", "region"), ("route.eu", "europe")],
            &input,
            mode,
        );
        let outs: Vec<_> = out.batch.iter(&input).map(|o| o.output).collect();
        assert_eq!(outs, vec![Some("europe"), Some("us"), None], "{mode:?}");
    }
}

#[test]
fn config_errors_from_init_are_reported() {
    let rt = runtime();
    let c = rt.load(&guest("json_filter"), &[]).unwrap();
    let err = WasmTransform::new(
        &c,
        vec![
            ("field".into(), "a".into()),
            ("op".into(), "like".into()),
            ("value".into(), "1".into()),
        ],
        Limits::default(),
        "t",
        CallMode::Batch,
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "transform refused its config: config `op`: unknown operator `like` (use eq, ne, gt, ge, lt, le, contains, exists)"
    );
}

#[test]
fn second_load_uses_the_compile_cache() {
    let dir = tempfile::tempdir().unwrap();
    let rt = weir_runtime::Runtime::new(weir_runtime::RuntimeOptions {
        cache_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    let path = guest("json_enrich");
    let first = rt.load(&path, &[]).unwrap();
    assert_eq!(first.info().cache, weir_runtime::CacheOutcome::Miss);
    // While one is in use, loading it again shares its compiled code.
    let shared = rt.load(&path, &[]).unwrap();
    assert!(shared.shares_compiled_code(&first));
    drop((first, shared));
    let second = rt.load(&path, &[]).unwrap();
    assert_eq!(second.info().cache, weir_runtime::CacheOutcome::Hit);
    drop(second);
    // A corrupt artifact is discarded and recompiled, not trusted.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"garbage").unwrap();
    }
    let third = rt.load(&path, &[]).unwrap();
    assert_eq!(third.info().cache, weir_runtime::CacheOutcome::Miss);
    let input = batch(&[r#"{"a":"b"}"#]);
    let mut t =
        WasmTransform::new(&third, vec![], Limits::default(), "t", CallMode::Batch).unwrap();
    assert_eq!(
        values(&t.process_batch(&input).unwrap(), &input),
        vec![r#"{"a":"b"}"#]
    );
}
