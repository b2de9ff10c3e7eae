//! Attacks 4 and 5: a guest that never returns (a loop under a call
//! timeout of days, or just of a minute) must not make stop, delete, the
//! quota watcher or the server's own shutdown wait on it.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{append_values, put, tenant_with};
use crate::serve::Server;

fn looping(id: &str) -> String {
    format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\n[transform.limits]\ncall-timeout = \"60s\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n"
    )
}

/// Start `name` over a batch whose guest call logs, then loops; return
/// once the guest is in the call (its log line arrived).
fn start_looping(
    s: &Server,
    token: &str,
    data: &std::path::Path,
    tenant: &str,
    name: &str,
    id: &str,
) {
    let log = data.join(format!("tenants/{tenant}/log"));
    // One partition gets both: the guest logs, then spins.
    let mut t = weir_log::Topic::open(&log, "in")
        .or_else(|_| weir_log::Topic::create(&log, "in", 1))
        .unwrap();
    let mut b = weir_engine::RecordBatch::new(0);
    b.push(None, b"log", 0, 0);
    b.push(None, b"loop", 0, 0);
    t.append(None, &[b], || {}).unwrap();
    let (st, v) = put(s, token, name, &looping(id));
    assert!(st == 201 || st == 200, "{v}");
    let started = Instant::now();
    loop {
        let (_, lines) = s.call(
            "GET",
            &format!("/v1/pipelines/{name}/logs?tail=10"),
            Some(token),
            None,
        );
        if lines.to_string().contains("log record seen") {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the guest never ran: {lines}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// CPU seconds the server used over `d`. The sleep is the measuring
/// window, not a wait for something to happen.
fn cpu_over(pid: u32, d: Duration) -> f64 {
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        (f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()) as f64 / 100.0
    };
    let before = cpu();
    std::thread::sleep(d);
    cpu() - before
}

#[test]
fn stop_and_delete_interrupt_a_looping_guest_within_their_bound() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let mallory = s.tenant("mallory");
    let id = s.upload(&mallory, "misbehave");
    start_looping(&s, &mallory, &data, "mallory", "spin", &id);
    let t = Instant::now();
    let (st, v) = s.call("POST", "/v1/pipelines/spin/stop", Some(&mallory), None);
    let took = t.elapsed();
    assert_eq!(st, 200, "{v}");
    assert!(took < Duration::from_millis(2500), "stop took {took:?}");
    assert_eq!(v["state"], "stopped", "{v}");
    // Nothing spins on: the server is idle again.
    let used = cpu_over(s.pid(), Duration::from_secs(1));
    assert!(
        used < 0.5,
        "the server used {used} s of CPU in a second after the stop"
    );
    // Started again, the batch re-runs (nothing was committed) and spins;
    // delete is bounded the same way.
    let (st, v) = s.call("POST", "/v1/pipelines/spin/start", Some(&mallory), None);
    assert_eq!(st, 200, "{v}");
    let t = Instant::now();
    let (st, v) = s.call("DELETE", "/v1/pipelines/spin", Some(&mallory), None);
    assert_eq!(st, 204, "{v}");
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "delete took {:?}",
        t.elapsed()
    );
}

#[test]
fn a_looping_pipeline_holds_up_neither_quota_enforcement_nor_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &["--quota-interval", "100ms"]);
    let mallory = tenant_with(&s, "mallory", json!({"max-data-bytes": "64KiB"}));
    let bob = tenant_with(&s, "bob", json!({"max-data-bytes": "256KiB"}));
    let id = s.upload(&mallory, "misbehave");
    start_looping(&s, &mallory, &data, "mallory", "spin", &id);
    // Mallory goes over her quota while her guest spins: the watcher must
    // stop her pipeline without waiting for the guest...
    let mut filler =
        weir_log::Topic::create(&data.join("tenants/mallory/log"), "filler", 1).unwrap();
    let mut b = weir_engine::RecordBatch::new(0);
    for _ in 0..100 {
        b.push(None, &[b'x'; 1024], 0, 0);
    }
    filler.append(None, &[b], || {}).unwrap();
    let v = s.wait_for(&mallory, "spin", |v| v["state"] == "failed");
    assert_eq!(v["state"], "failed", "{v}");
    // ...and go on enforcing everyone else's.
    let bob_id = s.upload(&bob, "uppercase");
    append_values(&data.join("tenants/bob/log"), &["first"]);
    let (st, v) = put(
        &s,
        &bob,
        "fill",
        &looping(&bob_id).replace("[transform.limits]\ncall-timeout = \"60s\"\n", ""),
    );
    assert_eq!(st, 201, "{v}");
    let big: Vec<String> = (0..400)
        .map(|i| format!("{i:04}{}", "x".repeat(1020)))
        .collect();
    append_values(&data.join("tenants/bob/log"), &big);
    let v = s.wait_for(&bob, "fill", |v| v["state"] == "failed");
    assert!(
        v["last-error"]
            .as_str()
            .is_some_and(|e| e.contains("max-data-bytes")),
        "{v}"
    );
    // SIGTERM with a spinning guest and a followed log open: the server
    // ends within its grace (5 s for requests, 2 s for pipelines).
    let carol = s.tenant("carol");
    let carol_id = s.upload(&carol, "misbehave");
    start_looping(&s, &carol, &data, "carol", "spin2", &carol_id);
    let url = format!("{}/v1/pipelines/spin2/logs?follow=true", s.base);
    let auth = format!("Bearer {carol}");
    let http = s.http.clone();
    std::thread::spawn(move || {
        if let Ok(mut r) = http.get(&url).header("Authorization", &auth).call() {
            let _ = r.body_mut().read_to_string();
        }
    });
    let pid = s.pid();
    let t = Instant::now();
    // SAFETY: signalling the child process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let gone = state.is_empty() || state[state.rfind(')').unwrap() + 2..].starts_with('Z');
        if gone {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "weir serve still runs 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
