//! Attacks 9 and 10 and the lifecycle findings: a followed log outliving
//! its token, a deleted tenant's data read by the next tenant of that
//! name, compiled code and scratch files left behind, a relative `--data`.

use std::time::{Duration, Instant};

use super::{Victim, put};
use crate::serve::{Body, Server};

#[test]
fn a_followed_log_ends_when_its_token_is_rotated() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let alice = Victim::start(&s, &data);
    let rx = s.follow_logs(&alice.token, "copy", "");
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        "open 200"
    );
    let (st, v) = s.call("POST", "/v1/tenants/alice/token", Some(&s.admin), None);
    assert_eq!(st, 200, "{v}");
    let rotated = Instant::now();
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("the stream outlived its token: {seen:?}"));
        if line == "ended" {
            break;
        }
        seen.push(line);
    }
    assert!(
        rotated.elapsed() < Duration::from_secs(3),
        "{:?}",
        rotated.elapsed()
    );
    assert!(
        seen.iter().any(|l| l.contains("rotated or revoked")),
        "{seen:?}"
    );
}

#[test]
fn a_deleted_tenant_leaves_nothing_for_the_next_of_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let cache = dir.path().join("cache");
    let cache_env = cache.display().to_string();
    let s = Server::start_with(&data, &[], &[("WEIR_CACHE_DIR", &cache_env)], None);
    let alice = Victim::start(&s, &data);
    assert!(alice.root.join("checkpoints").is_dir());
    // A refused upload leaves no compiled code behind; a deleted one too.
    let bad = std::fs::read(crate::testkit::guest("not-a-transform")).unwrap();
    let bad_id = weir_runtime::sha256_hex(&bad);
    let (st, v) = s.call(
        "POST",
        "/v1/components",
        Some(&alice.token),
        Some(Body::Bytes(bad)),
    );
    assert_eq!(st, 400, "{v}");
    let compiled = |id: &str| {
        std::fs::read_dir(&cache)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(id))
            })
            .unwrap_or(false)
    };
    assert!(
        !compiled(&bad_id),
        "a refused upload's code stayed in the cache"
    );
    let (st, v) = s.call("DELETE", "/v1/tenants/alice", Some(&s.admin), None);
    assert_eq!(st, 204, "{v}");
    assert!(
        !alice.root.exists(),
        "the deleted tenant's data is still there"
    );
    let id = weir_runtime::sha256_hex(&std::fs::read(crate::testkit::guest("uppercase")).unwrap());
    assert!(
        !compiled(&id),
        "a deleted component's code stayed in the cache"
    );
    // A new tenant of the same name starts empty.
    let again = s.tenant("alice");
    assert_eq!(
        s.call("GET", "/v1/pipelines", Some(&again), None).1,
        serde_json::json!([])
    );
    assert_eq!(
        s.call("GET", "/v1/components", Some(&again), None).1,
        serde_json::json!([])
    );
    assert!(
        !alice.root.exists() || crate::serve::files_under(&alice.root).is_empty(),
        "the new tenant sees the old one's files"
    );
}

#[test]
fn a_relative_data_directory_works_and_scratch_is_cleared_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let rel = std::path::Path::new("rel-data");
    let s = Server::start_with(rel, &[], &[], Some(dir.path()));
    let data = dir.path().join(rel);
    let acme = s.tenant("acme");
    let id = s.upload(&acme, "uppercase");
    super::append_values(&data.join("tenants/acme/log"), &["x"]);
    let spec = format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n"
    );
    let (st, v) = put(&s, &acme, "p", &spec);
    assert_eq!(st, 201, "{v}");
    s.wait_committed(&acme, "p", 0);
    assert_eq!(
        crate::testkit::topic_values(&data.join("tenants/acme/log"), "out").unwrap(),
        vec!["X".to_string()]
    );
    // An upload interrupted by a crash leaves its temp file; a restart
    // removes it.
    let admin = s.admin.clone();
    let stray = data.join("tmp/.tmp-interrupted.wasm");
    std::fs::write(&stray, b"half an upload").unwrap();
    drop(s);
    let s = Server::restart(&data, &admin);
    assert!(!stray.exists(), "a stale upload survived the restart");
    s.wait_committed(&acme, "p", 0);
}
