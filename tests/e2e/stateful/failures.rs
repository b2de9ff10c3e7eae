//! Stateful pipelines meeting bad input: corrupt or missing state files,
//! late records, a stateless guest asked for a stateful output mode.

use super::examples::{window_expected, window_inputs, window_spec};
use super::{BASE, Fixture};

/// Run a pipeline partly (killed after batch 2's commit) and return it.
fn half_run() -> Fixture {
    let inputs = window_inputs(3000);
    let f = Fixture::new(&window_spec(false), &inputs);
    assert!(f.run_with_fault("after-commit-write@2"));
    f
}

fn run_err(f: &Fixture) -> String {
    let out = f.command().output().unwrap();
    assert!(!out.status.success(), "the run should have failed");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_missing_or_corrupt_state_file_is_named() {
    let f = half_run();
    let state = f.path().join("ckpt/state/0/0");
    // Version 3 is batch 3's starting state: snapshot 1 plus deltas 2 and 3
    // (snapshots every 3 versions).
    let deltas = state.join("deltas");
    let delta = deltas.join("3");
    let bytes = std::fs::read(&delta).unwrap();
    let mut torn = bytes.clone();
    let n = torn.len();
    torn[n - 5] ^= 0x55;
    std::fs::write(&delta, &torn).unwrap();
    let err = run_err(&f);
    assert!(
        err.contains("state/0/0/deltas/3: corrupt state file: checksum mismatch"),
        "{err}"
    );
    std::fs::remove_file(&delta).unwrap();
    let err = run_err(&f);
    assert!(
        err.contains("state/0/0/deltas/3: missing: needed to load state version 3"),
        "{err}"
    );
    // Put it back: the pipeline recovers and the output is exact.
    std::fs::write(&delta, &bytes).unwrap();
    f.run_to_end();
    assert_eq!(f.output(), window_expected(&window_inputs(3000)));
}

#[test]
fn late_records_go_to_the_error_policy_when_asked() {
    // Partition 0 gets a record 10 s older than everything after it.
    let mut inputs = window_inputs(2000);
    let late_ts = BASE + 500;
    inputs.push((
        0,
        format!(r#"{{"key":"user-0","ts":{late_ts},"late":true}}"#),
        late_ts,
    ));
    inputs.extend(window_inputs(2600).into_iter().skip(2000));
    let mut spec = window_spec(false);
    spec.extra = r#"
[sink.dead-letter]
type = "log"
path = "log"
topic = "dead"
"#;
    let text_with_reject = |f: &Fixture| {
        let p = f.path().join("p.toml");
        let t = std::fs::read_to_string(&p).unwrap();
        let t = t
            .replace("on-error = \"fail\"", "on-error = \"dead-letter\"")
            .replace("delay = \"500ms\"", "delay = \"500ms\"\nlate = \"reject\"");
        std::fs::write(p, t).unwrap();
    };
    let f = Fixture::new(&spec, &inputs);
    text_with_reject(&f);
    f.run_to_end();
    let dead = f.output_of("dead");
    assert_eq!(dead.len(), 1, "{dead:?}");
    let letter: serde_json::Value = serde_json::from_str(&dead[0]).unwrap();
    assert_eq!(letter["error"]["kind"], "late");
    assert!(
        letter["error"]["message"]
            .as_str()
            .unwrap()
            .contains("older than the watermark"),
        "{letter}"
    );
    // The late record counted nowhere: the windows are those of the rest.
    let rest: Vec<_> = inputs
        .iter()
        .filter(|(_, v, _)| !v.contains("late"))
        .cloned()
        .collect();
    assert_eq!(f.output(), window_expected(&rest));
}

#[test]
fn stateful_output_modes_need_a_stateful_guest() {
    let f = Fixture::new(
        &super::Spec {
            component: "uppercase",
            config: "",
            delay: "1s",
            continuous: false,
            batch: 10,
            extra: "",
            disk: false,
            key: "",
            transform: "",
        },
        &[],
    );
    let p = f.path().join("p.toml");
    let t = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, format!("output-mode = \"complete\"\n{t}")).unwrap();
    let err = run_err(&f);
    assert!(
        err.contains("output-mode = \"complete\" needs a stateful transform"),
        "{err}"
    );
}
