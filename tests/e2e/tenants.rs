//! `weir host`: several tenants' pipelines in one process, each tenant with
//! its own checkpoint root and log, quotas checked at start, and a failing
//! pipeline stopping only itself.

use std::path::Path;

use weir_engine::RecordBatch;
use weir_log::Topic;

use crate::testkit::{guest, weir};

/// A topic `name` with `values`, one partition.
fn topic(log: &Path, name: &str, values: &[&str]) {
    let mut t = Topic::create(log, name, 1).unwrap();
    let mut b = RecordBatch::new(0);
    for (i, v) in values.iter().enumerate() {
        b.push(None, v.as_bytes(), i as i64, 0);
    }
    t.append(None, &[b], || {}).unwrap();
}

fn read(log: &Path, name: &str) -> Vec<String> {
    crate::testkit::topic_values(log, name).unwrap()
}

fn pipeline(dir: &Path, file: &str, name: &str, component: &str, input: &str, output: &str) {
    let text = format!(
        r#"
name = "{name}"
checkpoint = "ignored-by-the-host"
[[source]]
type = "log"
path = "log"
topic = "{input}"
[transform]
component = "{}"
on-error = "fail"
[sink.default]
type = "log"
path = "log"
topic = "{output}"
[trigger]
type = "available-now"
"#,
        guest(component).display()
    );
    std::fs::write(dir.join(file), text).unwrap();
}

const TENANTS: &str = r#"
root = "data"
[tenants.acme]
max-pipelines = 2
max-memory = "1GiB"
[tenants.globex]
max-pipelines = 2
max-memory = "512MiB"
cpu-weight = 2
"#;

fn host(dir: &Path, pipelines: &[(&str, &str)]) -> std::process::Output {
    let mut text = TENANTS.to_string();
    for (tenant, file) in pipelines {
        text.push_str(&format!(
            "[[pipelines]]\ntenant = \"{tenant}\"\nfile = \"{file}\"\n"
        ));
    }
    std::fs::write(dir.join("host.toml"), text).unwrap();
    weir()
        .arg("host")
        .arg(dir.join("host.toml"))
        .output()
        .unwrap()
}

#[test]
fn tenants_run_side_by_side_with_their_own_roots_and_logs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log = d.join("log");
    let words: Vec<String> = (0..300).map(|i| format!("word {i}")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    topic(&log, "in-a1", &words);
    topic(&log, "in-a2", &words[..100]);
    topic(&log, "in-b1", &["ok", "ok", "panic", "ok"]);
    topic(&log, "in-b2", &["log", "ok"]);
    pipeline(d, "a1.toml", "orders", "uppercase", "in-a1", "out-a1");
    pipeline(d, "a2.toml", "clicks", "uppercase", "in-a2", "out-a2");
    // Same pipeline name as acme's: tenants' checkpoints never meet.
    pipeline(d, "b1.toml", "orders", "misbehave", "in-b1", "out-b1");
    pipeline(d, "b2.toml", "events", "misbehave", "in-b2", "out-b2");
    let out = host(
        d,
        &[
            ("acme", "a1.toml"),
            ("acme", "a2.toml"),
            ("globex", "b1.toml"),
            ("globex", "b2.toml"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "globex/orders fails: {stderr}");
    assert!(
        stderr.contains("acme/orders: 1 batch(es), 300 input rows, 300 output rows"),
        "{stderr}"
    );
    assert!(
        stderr.contains("acme/clicks: 1 batch(es), 100 input rows, 100 output rows"),
        "{stderr}"
    );
    assert!(stderr.contains("globex/events: 1 batch(es)"), "{stderr}");
    assert!(
        stderr.contains("globex/orders: failed:") && stderr.contains("offset 2"),
        "{stderr}"
    );
    // The other tenant's failure cost acme nothing.
    let upper: Vec<String> = words.iter().map(|w| w.to_uppercase()).collect();
    assert_eq!(read(&log, "out-a1"), upper);
    assert_eq!(read(&log, "out-a2"), upper[..100]);
    // Checkpoints under each tenant's root, whatever the pipeline file said.
    for (t, p) in [("acme", "orders"), ("acme", "clicks"), ("globex", "orders")] {
        let ckpt = d.join("data/tenants").join(t).join("checkpoints").join(p);
        assert!(ckpt.join("metadata").is_file(), "{}", ckpt.display());
    }
    assert!(!d.join("ignored-by-the-host").exists());
    // Each tenant's log has its own pipelines and guests, nobody else's.
    let acme = std::fs::read_to_string(d.join("data/tenants/acme/weir.log")).unwrap();
    let globex = std::fs::read_to_string(d.join("data/tenants/globex/weir.log")).unwrap();
    assert!(acme.contains("acme/orders: finished"), "{acme}");
    assert!(!acme.contains("globex"), "{acme}");
    assert!(globex.contains("globex/orders: failed"), "{globex}");
    assert!(
        globex.contains("globex/events/source-0/task-0: log record seen"),
        "{globex}"
    );
}

#[test]
fn tenant_quotas_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    topic(&d.join("log"), "in", &["a"]);
    for (f, n) in [("p1.toml", "one"), ("p2.toml", "two"), ("p3.toml", "three")] {
        pipeline(d, f, n, "uppercase", "in", "out");
    }
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[
                ("acme", "p1.toml"),
                ("acme", "p2.toml"),
                ("acme", "p3.toml"),
            ],
            "tenant `acme` has 3 pipelines; its max-pipelines quota is 2",
        ),
        (
            &[("initech", "p1.toml")],
            "`p1.toml` belongs to tenant `initech`, which has no [tenants.initech] section",
        ),
        (
            &[("acme", "p1.toml"), ("acme", "p1.toml")],
            "tenant `acme` has two pipelines named `one`",
        ),
    ];
    for (pipelines, want) in cases {
        let out = host(d, pipelines);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(want), "{stderr}");
        assert!(
            !d.join("out").exists() && !d.join("data").exists(),
            "nothing ran"
        );
    }
    // A guest memory limit above the tenant's quota could never run.
    let p = d.join("p1.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(
        &p,
        text.replace(
            "on-error = \"fail\"",
            "on-error = \"fail\"\n[transform.limits]\nmemory = \"600MiB\"",
        ),
    )
    .unwrap();
    let out = host(d, &[("globex", "p1.toml")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pipeline `one` of tenant `globex`: its guest memory limit (629145600 bytes) exceeds the tenant's max-memory (536870912 bytes)"),
        "{stderr}"
    );
}

#[test]
fn the_example_host_file_is_valid() {
    let path = crate::testkit::repo_root().join("examples/host.toml");
    let spec = weir_pipeline::spec::HostSpec::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.tenants.len(), 2);
    assert_eq!(spec.pipelines.len(), 3);
    for (t, p) in &spec.pipelines {
        assert!(
            p.checkpoint
                .dir()
                .unwrap()
                .starts_with(&spec.tenants[*t].dir),
            "{p:?}"
        );
    }
}
