//! A tenant flooding the API, which every tenant shares: hostile pipeline
//! files PUT from many connections as fast as they are answered. Its
//! `max-requests-per-second` slows it down (a request over the rate waits
//! its turn, or is refused with 429 after a second), so the flood cannot
//! take the cores from the others; alice's calls stay fast and unthrottled.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Victim, assert_refused, put, tenant_with};
use crate::serve::Server;

const RATE: u64 = 20;
const THREADS: usize = 8;
const FLOOD: Duration = Duration::from_secs(4);

/// What mallory's flood got: answers (refused files) and 429s.
#[derive(Default)]
struct Outcomes {
    answered: usize,
    throttled: usize,
}

#[test]
fn a_tenant_flooding_the_api_is_held_to_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Arc::new(Server::start(&data, &[]));
    let mut alice = Victim::start(&s, &data);
    let mallory = tenant_with(&s, "mallory", json!({"max-requests-per-second": RATE}));
    let hostile = "[[source]]\ntype = \"rate\"\npartitions = 4294967295\nrows-per-second = 1\n[sink.default]\ntype = \"console\"\n";
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let flood: Vec<_> = (0..THREADS)
        .map(|_| {
            let (s, token, stop) = (s.clone(), mallory.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut got = Outcomes::default();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let (st, v) = put(&s, &token, "evil", hostile);
                    match st {
                        400 => got.answered += 1,
                        429 => {
                            assert_eq!(v["error"], "too-many-requests", "{v}");
                            assert!(
                                t.elapsed() >= Duration::from_millis(900),
                                "a 429 came at once ({:?}): the flood would loop",
                                t.elapsed()
                            );
                            got.throttled += 1;
                        }
                        other => panic!("a hostile file got {other}: {v}"),
                    }
                }
                got
            })
        })
        .collect();
    // Meanwhile alice's calls are answered at once.
    let mut took = Vec::new();
    while started.elapsed() < FLOOD {
        let t = Instant::now();
        let (st, v) = s.call("GET", "/v1/pipelines/copy", Some(&alice.token), None);
        took.push(t.elapsed());
        assert_eq!(st, 200, "alice throttled: {v}");
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let (mut answered, mut throttled) = (0, 0);
    for t in flood {
        let got = t.join().unwrap();
        answered += got.answered;
        throttled += got.throttled;
    }
    let secs = started.elapsed().as_secs_f64();
    took.sort();
    let p99 = took[took.len() * 99 / 100];
    eprintln!(
        "flood: {answered} answered and {throttled} refused in {secs:.1} s (rate {RATE}/s); alice's p99 {p99:?} over {} calls",
        took.len()
    );
    // At most a second's burst and the rate after it.
    assert!(
        answered as f64 <= RATE as f64 * (secs + 1.0) + 2.0,
        "{answered} answered in {secs:.1} s"
    );
    assert!(answered >= RATE as usize * 2, "the rate is not a wall");
    assert!(throttled > 0, "eight threads never went over {RATE}/s?");
    assert!(p99 < Duration::from_millis(50), "alice's API p99 {p99:?}");
    alice.send(100);
    alice.assert_flowing();

    // A refusal says when to come back, in a header as well: twice the
    // rate at once queues past a second.
    let burst: Vec<_> = (0..RATE * 2 + 8)
        .map(|_| {
            let (s, token) = (s.clone(), mallory.clone());
            std::thread::spawn(move || {
                let mut r = s
                    .http
                    .get(format!("{}/v1/whoami", s.base))
                    .header("Authorization", &format!("Bearer {token}"))
                    .call()
                    .unwrap();
                let retry = r
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_string());
                let _ = r.body_mut().read_to_string();
                (r.status().as_u16(), retry)
            })
        })
        .collect();
    let answers: Vec<(u16, Option<String>)> =
        burst.into_iter().map(|h| h.join().unwrap()).collect();
    let retry = answers
        .iter()
        .find(|(st, _)| *st == 429)
        .and_then(|(_, r)| r.clone())
        .unwrap_or_else(|| panic!("no 429 with Retry-After: {answers:?}"));
    let retry: u64 = retry.parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");

    // The throttling is counted where users look, each tenant seeing its own.
    let metrics = |token: &str| s.metrics(token);
    let admin = metrics(&s.admin);
    assert!(
        admin.contains(r#"weir_api_throttled_requests_total{tenant="mallory",outcome="refused"}"#),
        "{admin}"
    );
    assert!(!metrics(&alice.token).contains("mallory"));

    // The rate is the admin's, bounded.
    for bad in [0u64, 1_000_000] {
        assert_refused(
            s.patch_tenant("mallory", json!({"max-requests-per-second": bad})),
            400,
            "max-requests-per-second",
            &data,
        );
    }
    let (st, v) = s.patch_tenant("mallory", json!({"max-requests-per-second": 1000}));
    assert_eq!(
        (st, v["max-requests-per-second"].as_u64()),
        (200, Some(1000))
    );
}
