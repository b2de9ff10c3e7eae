//! The windowed count in group mode: members that come and go, and a
//! member SIGKILLed at each step of a commit, against the reference.

use std::time::{Duration, Instant};

use super::super::{broker, create_topic, sorted_values, unique};
use super::{Group, Tail, base, produce};

/// The windowed count's pipeline lines (after `[transform]`).
pub(crate) const WINDOWS: &str = r#"
[transform.config]
size = "1s"
[event-time]
field = "ts"
delay = "500ms"
[state]
key-field = "key"
"#;

fn keyed() -> weir_engine::exchange::Partitioning {
    use weir_engine::exchange::{Partitioning, StateKey};
    Partitioning {
        key: StateKey::Field(vec!["key".into()]),
        source_keys: Default::default(),
        partitions: 12,
        exchange: false,
    }
}

type Records = Vec<(String, String, i64)>;

/// `n` events of 101 keys, 2 ms apart; and one record per partition, ten
/// minutes past them (brokers refuse timestamps over an hour ahead), under
/// a key of that partition, which closes every real window.
fn window_records(n: usize) -> (Records, Records) {
    let record = |key: &str, ts: i64| {
        (
            key.to_string(),
            format!(r#"{{"key":"{key}","ts":{ts}}}"#),
            ts,
        )
    };
    let real = (0..n)
        .map(|i| record(&format!("k{}", i % 101), base() + 2 * i as i64))
        .collect();
    let flush = (0..12)
        .map(|p| {
            let key = (0..)
                .map(|j| format!("flush-{j}"))
                .find(|k| keyed().partition_of(k.as_bytes()) == p)
                .unwrap();
            record(&key, base() + 2 * n as i64 + 600_000)
        })
        .collect();
    (real, flush)
}

fn windows_expected(real: &Records) -> Vec<String> {
    let inputs: Vec<(u32, String, i64)> =
        real.iter().map(|(_, v, ts)| (0, v.clone(), *ts)).collect();
    crate::stateful::examples::windows_until(&inputs, 1_000, i64::MAX)
}

/// The windowed count (tumbling 1 s windows per key, state keyed by the
/// `key` field) run by members that come and go: every window the final
/// watermarks close is counted exactly once, as the reference says. Each
/// partition's watermark is its own; a last record far ahead in every
/// partition closes all the real windows.
#[test]
fn a_windowed_count_over_group_members_equals_the_reference() {
    const N: usize = 200_000;
    let bootstrap = broker();
    let (input, output) = (unique("wgroup-in"), unique("wgroup-out"));
    create_topic(bootstrap, &input, 12, &[]);
    create_topic(bootstrap, &output, 4, &[]);
    let (real, flush) = window_records(N);
    let mut g = Group::new(&input, &output, "window_count", WINDOWS, false);
    let mut tail = Tail::new(bootstrap, &output, 4);
    produce(bootstrap, &input, &real[..N / 2]);
    for _ in 0..3 {
        g.start();
    }
    let logs = || g.logs();
    tail.wait_for(1_000, Duration::from_secs(120), &logs);
    g.signal(0, libc::SIGKILL);
    produce(bootstrap, &input, &real[N / 2..]);
    std::thread::sleep(Duration::from_secs(2));
    g.start();
    produce(bootstrap, &input, &flush);
    let expected = windows_expected(&real);
    tail.reach(expected.len(), Duration::from_secs(240));
    std::thread::sleep(Duration::from_secs(3));
    // Each live member's /metrics names its partitions: together all 12,
    // none twice (once a rebalance still under way has settled).
    g.wait_until_held_by(&[1, 2, 3]);
    g.stop_all();
    let got = sorted_values(bootstrap, &output);
    if got.len() != expected.len() {
        let missing: Vec<&String> = expected
            .iter()
            .filter(|e| got.binary_search(e).is_err())
            .take(20)
            .collect();
        let extra: Vec<&String> = got
            .iter()
            .filter(|e| expected.binary_search(e).is_err())
            .take(20)
            .collect();
        let keys: std::collections::BTreeSet<u32> = expected
            .iter()
            .filter(|e| got.binary_search(e).is_err())
            .map(|e| keyed().partition_of(e.split('"').nth(3).unwrap().as_bytes()))
            .collect();
        panic!(
            "{} windows, expected {}; missing (partitions {keys:?}) {missing:#?}; extra {extra:#?}\n{}",
            got.len(),
            expected.len(),
            g.logs()
        );
    }
    assert!(got == expected, "windows differ from the reference");
    assert!(
        g.log_of(3).contains("restored state version"),
        "{}",
        g.logs()
    );
}

/// In continuous mode, one member SIGKILLed at each step of a commit in
/// turn and restarted: the windows equal the reference.
#[test]
fn a_group_member_killed_at_every_step_recovers_exactly() {
    const N: usize = 40_000;
    let bootstrap = broker();
    let (input, output) = (unique("fgroup-in"), unique("fgroup-out"));
    create_topic(bootstrap, &input, 12, &[]);
    create_topic(bootstrap, &output, 4, &[]);
    let (real, flush) = window_records(N);
    let expected = windows_expected(&real);
    let mut g = Group::new(&input, &output, "window_count", WINDOWS, true);
    let faults = [
        "group-before-commit#1",
        "group-mid-transaction#1",
        "after-state-write#5",
        "group-after-commit#1",
    ];
    // Each member gets new input, dies at its point, and the next one
    // restores what was committed.
    let slice = N / (faults.len() + 1);
    for (i, f) in faults.iter().enumerate() {
        produce(bootstrap, &input, &real[i * slice..(i + 1) * slice]);
        g.start_with(Some(f));
        let deadline = Instant::now() + Duration::from_secs(90);
        let status = loop {
            if let Some(s) = g.members[i].try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "{f} not reached:\n{}",
                g.log_of(i)
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "{f}: {}", g.log_of(i));
    }
    produce(bootstrap, &input, &real[faults.len() * slice..]);
    produce(bootstrap, &input, &flush);
    g.start();
    let mut tail = Tail::new(bootstrap, &output, 4);
    tail.reach(expected.len(), Duration::from_secs(180));
    std::thread::sleep(Duration::from_secs(2));
    g.stop_all();
    let got = sorted_values(bootstrap, &output);
    assert_eq!(got.len(), expected.len(), "{}", g.logs());
    assert!(got == expected, "windows differ from the reference");
}
