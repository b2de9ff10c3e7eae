//! Network faults between weir and the S3 server holding its checkpoint
//! (Toxiproxy in front of moto): latency, connection resets, a blackholed
//! link and a cut one, each while a windowed count runs, held and then
//! healed. The run finishes by itself once the link is back, and its
//! windows equal the reference; the time from the heal to the end is
//! printed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::toxiproxy::{Toxiproxy, free_port};
use crate::stateful::Fixture;
use crate::stateful::examples::{window_expected, window_inputs, window_spec};
use crate::testkit::{s3_bucket, s3_endpoint, s3_env};

fn checkpoint_faults_keep_windows_exact(continuous: bool) {
    let proxy = Toxiproxy::start();
    let listen = format!("127.0.0.1:{}", free_port());
    proxy.proxy("s3", &listen, s3_endpoint().trim_start_matches("http://"));
    let env: Vec<(String, String)> = s3_env()
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "AWS_ENDPOINT" => (k, format!("http://{listen}")),
            _ => (k, v),
        })
        .collect();
    let inputs = window_inputs(3_000);
    let expected = window_expected(&inputs);
    let mode = if continuous {
        "continuous"
    } else {
        "micro-batch"
    };
    let faults: [(&str, Option<(&str, serde_json::Value)>); 4] = [
        ("latency 200 ms", Some(("latency", json!({"latency": 200})))),
        (
            "connections reset after 100 ms",
            Some(("reset_peer", json!({"timeout": 100}))),
        ),
        ("blackhole", Some(("timeout", json!({"timeout": 0})))),
        ("link cut", None),
    ];
    for (name, toxic) in faults {
        let url = format!("s3://{}/pipelines/window", s3_bucket("netfault"));
        let f = Fixture::with_checkpoint(&window_spec(continuous), &inputs, &url, env.clone());
        let log = f.path().join("weir.log");
        let child = f
            .command()
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        match &toxic {
            Some((kind, attributes)) => proxy.toxic("s3", kind, attributes.clone()),
            None => proxy.set_enabled("s3", false),
        }
        // The fault's window: the run goes on, or waits, through it.
        std::thread::sleep(Duration::from_secs(4));
        match &toxic {
            Some((kind, _)) => proxy.heal("s3", kind),
            None => proxy.set_enabled("s3", true),
        }
        let healed = Instant::now();
        // Wait for the run's end itself, with a deadline.
        let pid = child.id() as i32;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut child = child;
            let _ = tx.send(child.wait());
        });
        let Ok(status) = rx.recv_timeout(Duration::from_secs(180)) else {
            // SAFETY: signalling the child this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{mode}, {name}: the run never ended");
        };
        let status = status.unwrap();
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(status.success(), "{mode}, {name}: {status}: {stderr}");
        eprintln!(
            "{mode}, checkpoint behind {name}: finished {} ms after the link was healed",
            healed.elapsed().as_millis()
        );
        assert_eq!(f.output(), expected, "{mode}, checkpoint behind {name}");
    }
}

#[test]
fn micro_batch_windows_are_exact_through_object_store_faults() {
    checkpoint_faults_keep_windows_exact(false);
}

#[test]
fn continuous_windows_are_exact_through_object_store_faults() {
    checkpoint_faults_keep_windows_exact(true);
}
