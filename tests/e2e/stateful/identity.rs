//! A checkpoint knows what wrote it: a restart with another component or
//! another state setting is refused with what changed (unless upgraded), a
//! second `weir run` on a running checkpoint is refused with the holder's
//! pid, and a file sink directory belongs to one query.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::testkit::{guest, run_command, run_ok};

fn pipeline(dir: &Path, component: &Path, partitions: u32, out: &str, checkpoint: &str) {
    let text = format!(
        r#"
name = "identity"
checkpoint = "{checkpoint}"
[[source]]
type = "files"
path = "in"
[event-time]
field = "ts"
[state]
key-field = "key"
partitions = {partitions}
[transform]
component = "{component}"
[transform.config]
size = "1s"
[sink.default]
type = "files"
path = "{out}"
[trigger]
type = "available-now"
"#,
        component = component.display()
    );
    std::fs::write(dir.join("p.toml"), text).unwrap();
}

fn input(dir: &Path) {
    let lines: Vec<String> = (0..50)
        .map(|i| format!(r#"{{"key":"k{}","ts":{}}}"#, i % 3, 1_000 * i))
        .collect();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.jsonl"), lines.join("\n")).unwrap();
}

fn run_err(dir: &Path, args: &[&str]) -> String {
    let out = run_command(dir, None).args(args).output().unwrap();
    assert!(!out.status.success(), "the run should have been refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The same component with one more (custom) section: other bytes, so
/// another sha256.
fn another_build(of: &Path, to: &Path) {
    let mut bytes = std::fs::read(of).unwrap();
    bytes.extend_from_slice(&[0x00, 0x06, 0x04, b'n', b'o', b't', b'e', 0x01]);
    std::fs::write(to, bytes).unwrap();
}

#[test]
fn a_changed_component_or_state_setting_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    input(dir.path());
    let wasm = guest("window_count");
    pipeline(dir.path(), &wasm, 4, "out", "ckpt");
    run_ok(run_command(dir.path(), None));

    let v2 = dir.path().join("v2.wasm");
    another_build(&wasm, &v2);
    pipeline(dir.path(), &v2, 4, "out", "ckpt");
    let err = run_err(dir.path(), &[]);
    assert!(
        err.contains("was written with component sha256:")
            && err.contains("restart with --upgrade to keep the checkpoint's state"),
        "{err}"
    );
    // Opting in keeps the state and records the new component.
    run_ok({
        let mut c = run_command(dir.path(), None);
        c.arg("--upgrade");
        c
    });
    run_ok(run_command(dir.path(), None));

    pipeline(dir.path(), &v2, 8, "out", "ckpt");
    for args in [&[][..], &["--upgrade"][..]] {
        let err = run_err(dir.path(), args);
        assert!(
            err.contains("was written with state partitions = 4, and this pipeline has 8")
                && err.contains("cannot change on restart"),
            "{err}"
        );
    }
}

#[test]
fn a_running_checkpoint_is_locked_and_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    input(dir.path());
    pipeline(dir.path(), &guest("window_count"), 2, "out", "ckpt");
    let text = std::fs::read_to_string(dir.path().join("p.toml")).unwrap();
    // A processing-time trigger keeps the first run going.
    let text = text.replace(
        "type = \"available-now\"",
        "type = \"processing-time\"\ninterval = \"100ms\"",
    );
    std::fs::write(dir.path().join("p.toml"), text).unwrap();
    let mut first = run_command(dir.path(), None).spawn().unwrap();
    let lock = dir.path().join("ckpt/lock");
    let started = Instant::now();
    while std::fs::read_to_string(&lock).map_or(true, |s| s.trim() != first.id().to_string()) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the first run never locked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let err = run_err(dir.path(), &[]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(
        err.contains(&format!(
            "is in use by another weir process (pid {})",
            first.id()
        )),
        "{err}"
    );
    // The kernel released the killed holder's lock.
    let text = std::fs::read_to_string(dir.path().join("p.toml")).unwrap();
    let text = text.replace(
        "type = \"processing-time\"\ninterval = \"100ms\"",
        "type = \"available-now\"",
    );
    std::fs::write(dir.path().join("p.toml"), text).unwrap();
    run_ok(run_command(dir.path(), None));
}

#[test]
fn a_file_sink_directory_belongs_to_one_query() {
    let dir = tempfile::tempdir().unwrap();
    input(dir.path());
    pipeline(dir.path(), &guest("window_count"), 2, "out", "ckpt-a");
    run_ok(run_command(dir.path(), None));
    // A new checkpoint is a new query: its batch 0 is not the old batch 0.
    pipeline(dir.path(), &guest("window_count"), 2, "out", "ckpt-b");
    let err = run_err(dir.path(), &[]);
    assert!(
        err.contains("holds the output of another query") && err.contains("new directory"),
        "{err}"
    );
}
