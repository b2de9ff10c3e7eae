//! The documented stateful example pipelines run as written (paths
//! redirected to a temporary directory) and produce what the reference
//! implementations say.

use super::Input;
use super::examples::{dedup_of, sessions_of, windows_of};
use crate::testkit::{guest, repo_root, run_command, run_ok};

fn inputs(data: &str) -> Vec<Input> {
    let text = std::fs::read_to_string(
        repo_root()
            .join("examples/data")
            .join(data)
            .join("part-0.jsonl"),
    )
    .unwrap();
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (0, l.to_string(), v["ts"].as_i64().unwrap())
        })
        .collect()
}

pub(crate) fn run_example(name: &str, component: &str, data: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let example = repo_root()
        .join("examples/pipelines")
        .join(format!("{name}.toml"));
    let mut spec = std::fs::read_to_string(&example).unwrap();
    let data_dir = repo_root().join("examples/data").join(data);
    for (from, to) in [
        (
            format!("../../.demo/checkpoints/{name}"),
            "ckpt".to_string(),
        ),
        (format!("../../.demo/out/{name}"), "out".to_string()),
        (format!("../data/{data}"), data_dir.display().to_string()),
        (
            format!("../rust/target/wasm32-wasip2/release/{component}.wasm"),
            guest(component).display().to_string(),
        ),
    ] {
        assert!(spec.contains(&from), "{name}.toml no longer has {from}");
        spec = spec.replace(&from, &to);
    }
    std::fs::write(dir.path().join("p.toml"), spec).unwrap();
    run_ok(run_command(dir.path(), None));
    let mut got: Vec<String> = weir_connectors::file_sink::read_committed(&dir.path().join("out"))
        .unwrap()
        .into_iter()
        .map(|l| String::from_utf8(l).unwrap())
        .collect();
    got.sort();
    got
}

#[test]
fn the_stateful_example_pipelines_run() {
    let got = run_example("window-count", "window_count", "events");
    assert_eq!(got, windows_of(&inputs("events"), 10_000, 1_000));
    let got = run_example("sessionize", "sessionize", "clicks");
    assert_eq!(got, sessions_of(&inputs("clicks"), 5_000, 2_000));
    let got = run_example("dedup", "dedup", "orders");
    assert_eq!(got, dedup_of(&inputs("orders"), 10_000));
}
