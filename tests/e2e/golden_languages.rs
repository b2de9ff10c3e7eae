//! The golden suite across guest languages: for each case, the same
//! pipeline, input and expected output for each language's guest, through
//! `weir run` in micro-batch and continuous mode, each SIGKILLed at a fixed
//! step and at a varied moment, then restored. Cases: uppercase (the `weir
//! new` scaffolds), a JSON filter and a router to named outputs (the
//! examples in `examples/<lang>/`, dropped into a `weir new` project for
//! Python, JavaScript, Go and C, and the configurable Rust examples). Every
//! guest is built from source as a user builds it. The windowed count per
//! key runs through the stateful suite's fixture and reference (Rust's is
//! `stateful::examples`), so every case runs in all five languages.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use weir_engine::RecordBatch;
use weir_log::Topic;

use crate::testkit::{
    self, guest, own_file, run_command, run_ok, scaffold, topic_values, xorshift,
};

const RECORDS: usize = 20_000;

/// The `lang` project for `example` (or the uppercase scaffold), built in
/// a directory of its own.
fn scaffolded(lang: &str, example: Option<&str>) -> PathBuf {
    let case = example.map_or("upper".into(), |e| e.replace(['/', '.'], "-"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("golden-{lang}-{case}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    scaffold(&dir, lang, "golden", example)
}

/// One golden case: its input values and expected output per output name
/// ("" is the default output), each as a sorted list.
struct Case {
    value: fn(usize) -> String,
    expected: fn() -> BTreeMap<String, Vec<String>>,
}

fn upper_value(i: usize) -> String {
    format!("record {i} of the golden suite, héllo")
}

fn upper_expected() -> BTreeMap<String, Vec<String>> {
    // The guests uppercase ASCII only.
    let v = (0..RECORDS).map(|i| upper_value(i).to_ascii_uppercase());
    BTreeMap::from([(String::new(), sorted(v))])
}

/// JSON records with and without `amount` and `region`, and some that are
/// not JSON at all.
fn json_value(i: usize) -> String {
    if i % 97 == 13 {
        return format!("not json {i}");
    }
    if i % 11 == 5 {
        return format!(r#"{{"id":{i},"region":"eu","note":"no amount"}}"#);
    }
    let region = ["eu", "us", "apac"][i % 3];
    let amount = (i * 37) % 250;
    if i % 13 == 7 {
        return format!(r#"{{"id":{i},"amount":{amount},"note":"héllo"}}"#);
    }
    format!(r#"{{"id":{i},"amount":{amount},"region":"{region}","note":"héllo"}}"#)
}

fn parsed(i: usize) -> Option<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(&json_value(i))
        .ok()
        .filter(serde_json::Value::is_object)
}

fn filter_expected() -> BTreeMap<String, Vec<String>> {
    let kept = (0..RECORDS)
        .filter(|&i| parsed(i).is_some_and(|d| d["amount"].as_f64().is_some_and(|a| a > 100.0)));
    BTreeMap::from([(String::new(), sorted(kept.map(json_value)))])
}

fn router_expected() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in 0..RECORDS {
        let Some(d) = parsed(i) else { continue };
        let name = match d["region"].as_str() {
            Some(r @ ("eu" | "us")) => r.to_string(),
            _ => String::new(),
        };
        out.entry(name).or_default().push(json_value(i));
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

fn sorted(v: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = v.collect();
    v.sort();
    v
}

/// A pipeline over 4 partitions of `case`'s input with `component`, its
/// `[transform]` extras (`extra`: config, grants) and a log sink per output
/// of the expectation, in `dir`.
fn fixture(dir: &Path, case: &Case, component: &Path, extra: &str, continuous: bool) {
    let mut t = Topic::create(&dir.join("log"), "in", 4).unwrap();
    let mut parts: Vec<RecordBatch> = (0..4).map(RecordBatch::new).collect();
    for i in 0..RECORDS {
        parts[i % 4].push(None, (case.value)(i).as_bytes(), i as i64, 0);
    }
    t.append(None, &parts, || {}).unwrap();
    let (mode, limit, trigger) = if continuous {
        (
            "mode = \"continuous\"\ncheckpoint-interval = \"20ms\"",
            "",
            "",
        )
    } else {
        (
            "",
            "max-records-per-trigger = 500",
            "[trigger]\ntype = \"available-now\"",
        )
    };
    let mut sinks = String::new();
    for name in (case.expected)().keys() {
        let (section, topic) = if name.is_empty() {
            ("default".to_string(), "out".to_string())
        } else {
            (name.clone(), format!("out-{name}"))
        };
        sinks += &format!(
            "[sink.{section}]\ntype = \"log\"\npath = \"log\"\ntopic = \"{topic}\"\npartitions = 2\n"
        );
    }
    let spec = format!(
        "checkpoint = \"ckpt\"\n{mode}\n[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n{limit}\n[transform]\ncomponent = \"{}\"\non-error = \"skip\"\n{extra}\n{sinks}{trigger}\n",
        component.display()
    );
    std::fs::write(dir.join("p.toml"), spec).unwrap();
}

fn output(dir: &Path, case: &Case) -> BTreeMap<String, Vec<String>> {
    (case.expected)()
        .keys()
        .map(|name| {
            let topic = if name.is_empty() {
                "out".into()
            } else {
                format!("out-{name}")
            };
            let v = topic_values(&dir.join("log"), &topic).unwrap_or_default();
            (name.clone(), sorted(v.into_iter()))
        })
        .collect()
}

fn golden(case: &Case, component: &Path, extra: &str, lang: &str) {
    let mut next = xorshift(0x601d_e1a9);
    let expected = (case.expected)();
    let total: usize = expected.values().map(Vec::len).sum();
    for continuous in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path(), case, component, extra, continuous);
        let idle = continuous.then_some("300ms");
        // First a kill at a fixed step, so one always lands mid-run however
        // fast the machine: batch 5 of 40 committed its output, or the first
        // epoch wrote part of its output and not its commit.
        let fault = if continuous {
            "mid-sink#1"
        } else {
            "after-sink-commit@5"
        };
        let out = run_command(dir.path(), idle)
            .env("WEIR_FAULT", fault)
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{lang}: {fault}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let partial: usize = output(dir.path(), case).values().map(Vec::len).sum();
        assert!(partial < total, "{lang}: {fault}");
        // Then one at a varied moment, which may land anywhere, even after
        // the end.
        let mut child = run_command(dir.path(), idle).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(20 + next() % 60));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        run_ok(run_command(dir.path(), idle));
        assert_eq!(
            output(dir.path(), case),
            expected,
            "{lang}, continuous={continuous}: after 2 SIGKILLs and a restore"
        );
    }
}

const UPPERCASE: Case = Case {
    value: upper_value,
    expected: upper_expected,
};
const JSON_FILTER: Case = Case {
    value: json_value,
    expected: filter_expected,
};
const ROUTER: Case = Case {
    value: json_value,
    expected: router_expected,
};

const RUST_FILTER_CONFIG: &str =
    "[transform.config]\nfield = \"amount\"\nop = \"gt\"\nvalue = \"100\"";
const RUST_ROUTER_CONFIG: &str = "[transform.config]\nfield = \"region\"\n\"route.eu\" = \"eu\"\n\"route.us\" = \"us\"\nstrict = \"true\"";

fn all_cases(lang: &str) {
    let g = &testkit::grants_line(lang);
    golden(&UPPERCASE, &scaffolded(lang, None), g, lang);
    golden(
        &JSON_FILTER,
        &scaffolded(lang, Some(&format!("json-filter/{}", example_file(lang)))),
        g,
        lang,
    );
    golden(
        &ROUTER,
        &scaffolded(lang, Some(&format!("router/{}", example_file(lang)))),
        g,
        lang,
    );
}

/// The example's file name in `examples/<lang>/<case>/`.
fn example_file(lang: &str) -> &'static str {
    match lang {
        "c" => "transform.c",
        other => own_file(other),
    }
}

#[test]
fn rust_guests_match_the_golden_outputs_in_both_modes_across_sigkills() {
    golden(&UPPERCASE, &guest("uppercase"), "", "rust");
    golden(
        &JSON_FILTER,
        &guest("json-filter"),
        RUST_FILTER_CONFIG,
        "rust",
    );
    golden(&ROUTER, &guest("router"), RUST_ROUTER_CONFIG, "rust");
}

#[test]
fn c_guests_match_the_golden_outputs_in_both_modes_across_sigkills() {
    all_cases("c");
}

#[test]
fn go_guests_match_the_golden_outputs_in_both_modes_across_sigkills() {
    all_cases("go");
}

#[test]
fn python_guests_match_the_golden_outputs_in_both_modes_across_sigkills() {
    all_cases("python");
}

#[test]
fn js_guests_match_the_golden_outputs_in_both_modes_across_sigkills() {
    all_cases("js");
}

/// The window count of `lang` (examples/<lang>/window-count) through the
/// stateful suite's fixture, against its reference.
fn window_count(lang: &str) {
    use crate::stateful::examples::{window_expected, window_inputs, window_spec};
    use crate::stateful::{faults_at, faults_nth, golden as stateful_golden};
    let component = scaffolded(lang, Some(&format!("window-count/{}", example_file(lang))));
    let path = component.display().to_string();
    let inputs = window_inputs(3000);
    let expected = window_expected(&inputs);
    let mut spec = window_spec(false);
    spec.component = &path;
    let g = testkit::grants_line(lang);
    spec.transform = &g;
    stateful_golden(&spec, &inputs, &expected, &faults_at(&[2, 5]));
    spec.continuous = true;
    stateful_golden(&spec, &inputs, &expected, &faults_nth(&[1, 2]));
}

#[test]
fn python_window_count_matches_the_reference_in_both_modes_across_sigkills() {
    window_count("python");
}

#[test]
fn js_window_count_matches_the_reference_in_both_modes_across_sigkills() {
    window_count("js");
}

#[test]
fn c_window_count_matches_the_reference_in_both_modes_across_sigkills() {
    window_count("c");
}

#[test]
fn go_window_count_matches_the_reference_in_both_modes_across_sigkills() {
    window_count("go");
}

/// `lang`'s window helpers in update and complete modes, through the real
/// runtime and guard (`weir test`: the input is one batch, so both modes
/// emit every window once with its whole count; complete mode reads its
/// windows back with a state prefix scan).
fn window_modes(lang: &str) {
    let dir = tempfile::tempdir().unwrap();
    // A project of its own (the window-count golden test builds the same
    // example in parallel).
    let example = format!("window-count/{}", example_file(lang));
    let component = scaffold(dir.path(), lang, "golden", Some(&example));
    // Out of order by up to 5 s.
    let (input, expect) = testkit::window_events(dir.path(), 700, 6, 40, 5_000, 1_000);
    let grants = testkit::grants(lang);
    for mode in ["update", "complete"] {
        let o = testkit::weir()
            .arg("test")
            .arg(&component)
            .args(["--input", input.to_str().unwrap(), "--format", "json"])
            .args(["--key-field", "key", "--event-time", "ts", "--delay", "10s"])
            .args(["-c", "size=1s", "--output-mode", mode])
            .args(grants.iter().flat_map(|g| ["--grant", g]))
            .args(["--expect", expect.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{lang} {mode}: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

#[test]
fn c_window_helpers_emit_in_update_and_complete_modes() {
    window_modes("c");
}

#[test]
fn go_window_helpers_emit_in_update_and_complete_modes() {
    window_modes("go");
}

#[test]
fn python_window_helpers_emit_in_update_and_complete_modes() {
    window_modes("python");
}

#[test]
fn js_window_helpers_emit_in_update_and_complete_modes() {
    window_modes("js");
}
