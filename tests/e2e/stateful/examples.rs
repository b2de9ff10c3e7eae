//! The three stateful examples, each against a reference implementation,
//! in micro-batch and continuous mode, straight and with crashes.

use std::collections::BTreeMap;

use super::{BASE, Fixture, Input, Spec, faults_at, faults_nth, golden, random_kills};

const WINDOW_MS: i64 = 1000;
const DELAY_MS: i64 = 500;

/// Keyed events 13 ms apart, each key in one partition (as in a topic
/// keyed by it): state is per partition.
pub(crate) fn window_inputs(n: usize) -> Vec<Input> {
    (0..n)
        .map(|i| {
            let k = i % 13;
            let ts = BASE + i as i64 * 13;
            let key = format!("user-{k}");
            (
                (k % 2) as u32,
                format!(r#"{{"key":"{key}","ts":{ts}}}"#),
                ts,
            )
        })
        .collect()
}

/// The watermark after all input: the slowest partition's newest event
/// time minus the delay.
fn final_watermark(inputs: &[Input], delay: i64) -> i64 {
    let mut max: BTreeMap<u32, i64> = BTreeMap::new();
    for (p, _, ts) in inputs {
        let m = max.entry(*p).or_insert(*ts);
        *m = (*m).max(*ts);
    }
    max.values().min().unwrap() - delay
}

/// Tumbling 1 s windows closed by the final watermark, with their counts.
pub(crate) fn window_expected(inputs: &[Input]) -> Vec<String> {
    windows_of(inputs, WINDOW_MS, DELAY_MS)
}

/// Tumbling `size` windows per key closed by the final watermark.
pub(crate) fn windows_of(inputs: &[Input], size: i64, delay: i64) -> Vec<String> {
    windows_until(inputs, size, final_watermark(inputs, delay))
}

/// Tumbling `size` windows per key that watermark `wm` closes.
pub(crate) fn windows_until(inputs: &[Input], size: i64, wm: i64) -> Vec<String> {
    let mut counts: BTreeMap<(String, i64), u64> = BTreeMap::new();
    for (_, v, ts) in inputs {
        let key = v.split('"').nth(3).unwrap().to_string();
        *counts.entry((key, ts - ts.rem_euclid(size))).or_default() += 1;
    }
    let mut out: Vec<String> = counts
        .into_iter()
        .filter(|((_, start), _)| start + size <= wm)
        .map(|((key, start), n)| {
            format!(
                r#"{{"key":"{key}","start":{start},"end":{},"count":{n}}}"#,
                start + size
            )
        })
        .collect();
    out.sort();
    out
}

pub(crate) fn window_spec(continuous: bool) -> Spec<'static> {
    Spec {
        component: "window_count",
        config: "size = \"1s\"",
        delay: "500ms",
        continuous,
        batch: 300,
        extra: "",
        disk: false,
        key: "key",
        transform: "",
    }
}

const GAP_MS: i64 = 1000;

/// Clicks of 12 users: each step one user (picked pseudo-randomly) clicks,
/// so users have sessions of varied lengths separated by varied gaps. A
/// user's clicks all land in one partition, as with a keyed topic.
fn session_inputs(n: usize) -> Vec<Input> {
    let mut next = crate::testkit::xorshift(0x5e55_1011);
    (0..n)
        .map(|i| {
            let user = next() % 12;
            let ts = BASE + i as i64 * 97;
            let page = format!("/p{}", next() % 5);
            let v = format!(r#"{{"user":"u{user}","page":"{page}","ts":{ts}}}"#);
            ((user % 2) as u32, v, ts)
        })
        .collect()
}

fn session_expected(inputs: &[Input]) -> Vec<String> {
    sessions_of(inputs, GAP_MS, DELAY_MS)
}

/// Sessions (clicks at most `gap` apart) closed by the final watermark.
pub(crate) fn sessions_of(inputs: &[Input], gap: i64, delay: i64) -> Vec<String> {
    let wm = final_watermark(inputs, delay);
    // Per user: (start, last click, clicks, pages) of each session.
    type Session = (i64, i64, u64, Vec<String>);
    let mut sessions: BTreeMap<String, Vec<Session>> = BTreeMap::new();
    for (_, v, ts) in inputs {
        let parts: Vec<&str> = v.split('"').collect();
        let (user, page) = (parts[3].to_string(), parts[7].to_string());
        let list = sessions.entry(user).or_default();
        match list.last_mut() {
            Some(s) if *ts <= s.1 + gap => {
                s.1 = *ts;
                s.2 += 1;
                if s.3.len() < 10 {
                    s.3.push(page);
                }
            }
            _ => list.push((*ts, *ts, 1, vec![page])),
        }
    }
    let mut out = Vec::new();
    for (user, list) in sessions {
        for (start, last, clicks, pages) in list {
            let end = last + gap;
            if end <= wm {
                let pages: Vec<String> = pages.iter().map(|p| format!("\"{p}\"")).collect();
                out.push(format!(
                    r#"{{"user":"{user}","start":{start},"end":{end},"clicks":{clicks},"pages":[{}]}}"#,
                    pages.join(",")
                ));
            }
        }
    }
    out.sort();
    out
}

fn session_spec(continuous: bool) -> Spec<'static> {
    Spec {
        component: "sessionize",
        config: "gap = \"1s\"",
        delay: "500ms",
        continuous,
        batch: 250,
        extra: "",
        disk: false,
        key: "user",
        transform: "",
    }
}

const TTL_MS: i64 = 2000;

/// Orders with repeated ids (id partitioned by parity), 10 ms apart.
fn dedup_inputs(n: usize) -> Vec<Input> {
    let mut next = crate::testkit::xorshift(0xdedd_0042);
    (0..n)
        .map(|i| {
            let id = next() % 400;
            let ts = BASE + i as i64 * 10;
            (
                (id % 2) as u32,
                format!(r#"{{"id":{id},"seq":{i},"ts":{ts}}}"#),
                ts,
            )
        })
        .collect()
}

fn dedup_expected(inputs: &[Input]) -> Vec<String> {
    dedup_of(inputs, TTL_MS)
}

/// First records per id, again once `ttl` passed since the last one kept.
pub(crate) fn dedup_of(inputs: &[Input], ttl: i64) -> Vec<String> {
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    let mut out = Vec::new();
    for (_, v, ts) in inputs {
        let id = v.split([':', ',']).nth(1).unwrap().to_string();
        let fresh = seen.get(&id).is_none_or(|first| first + ttl <= *ts);
        if fresh {
            seen.insert(id, *ts);
            out.push(v.clone());
        }
    }
    out.sort();
    out
}

fn dedup_spec(continuous: bool) -> Spec<'static> {
    Spec {
        component: "dedup",
        config: "ttl = \"2s\"\nkey-field = \"id\"",
        delay: "500ms",
        continuous,
        batch: 400,
        extra: "",
        disk: false,
        key: "id",
        transform: "",
    }
}

#[test]
fn windowed_count_micro_batch() {
    let inputs = window_inputs(4000);
    let expected = window_expected(&inputs);
    golden(
        &window_spec(false),
        &inputs,
        &expected,
        &faults_at(&[1, 4, 9]),
    );
}

#[test]
fn windowed_count_with_disk_state_in_both_modes() {
    let inputs = window_inputs(3000);
    let expected = window_expected(&inputs);
    let mut spec = window_spec(false);
    spec.disk = true;
    golden(&spec, &inputs, &expected, &faults_at(&[2, 5]));
    spec.continuous = true;
    golden(&spec, &inputs, &expected, &faults_nth(&[1, 2]));
}

#[test]
fn an_idle_partition_stops_holding_windows_back() {
    // Both partitions get data; then partition 1 goes quiet while
    // partition 0 goes on for a minute of event time.
    let all = window_inputs(4000);
    let (first, rest): (Vec<Input>, Vec<Input>) =
        all.into_iter().partition(|r| r.2 < BASE + 600 * 13);
    let later: Vec<Input> = rest.into_iter().filter(|r| r.0 == 0).collect();
    let inputs: Vec<Input> = first.iter().chain(&later).cloned().collect();
    let p0_max = later.iter().map(|r| r.2).max().unwrap();
    let held_back = window_expected(&inputs);
    let expected = windows_until(&inputs, WINDOW_MS, p0_max - DELAY_MS);
    assert!(
        expected.len() > held_back.len() + 20,
        "the test needs a gap"
    );
    let with_idle = |f: &Fixture| {
        let p = f.path().join("p.toml");
        let t = std::fs::read_to_string(&p).unwrap();
        let t = t.replace(
            "delay = \"500ms\"",
            "delay = \"500ms\"\nidle-timeout = \"1ms\"",
        );
        std::fs::write(p, t).unwrap();
    };
    for continuous in [false, true] {
        for (idle, crash, want) in [
            (false, false, &held_back),
            (true, false, &expected),
            (true, true, &expected),
        ] {
            let f = Fixture::new(&window_spec(continuous), &first);
            if idle {
                with_idle(&f);
            }
            f.run_to_end();
            f.append(&later);
            if crash {
                let fault = if continuous {
                    "mid-sink#2"
                } else {
                    "mid-sink@6"
                };
                assert!(f.run_with_fault(fault), "{fault}");
            }
            f.run_to_end();
            assert_eq!(
                &f.output(),
                want,
                "continuous={continuous}, idle-timeout={idle}, crash={crash}"
            );
        }
    }
}

#[test]
fn windowed_count_continuous() {
    let inputs = window_inputs(4000);
    let expected = window_expected(&inputs);
    golden(&window_spec(true), &inputs, &expected, &faults_nth(&[1, 2]));
}

#[test]
fn sessionize_micro_batch() {
    let inputs = session_inputs(3000);
    let expected = session_expected(&inputs);
    golden(
        &session_spec(false),
        &inputs,
        &expected,
        &faults_at(&[2, 5, 10]),
    );
}

#[test]
fn sessionize_continuous() {
    let inputs = session_inputs(3000);
    let expected = session_expected(&inputs);
    golden(
        &session_spec(true),
        &inputs,
        &expected,
        &faults_nth(&[1, 2]),
    );
}

#[test]
fn dedup_micro_batch() {
    let inputs = dedup_inputs(4000);
    let expected = dedup_expected(&inputs);
    golden(
        &dedup_spec(false),
        &inputs,
        &expected,
        &faults_at(&[1, 3, 7]),
    );
}

#[test]
fn dedup_continuous() {
    let inputs = dedup_inputs(4000);
    let expected = dedup_expected(&inputs);
    golden(&dedup_spec(true), &inputs, &expected, &faults_nth(&[1, 2]));
}

#[test]
fn windowed_count_survives_random_sigkills_in_both_modes() {
    let inputs = window_inputs(8000);
    let expected = window_expected(&inputs);
    for (continuous, seed) in [(false, 0x1234_5678), (true, 0x8765_4321)] {
        let mut spec = window_spec(continuous);
        spec.batch = 100;
        let f = Fixture::new(&spec, &inputs);
        let kills = random_kills(&f, seed, 8);
        assert_eq!(
            f.output(),
            expected,
            "continuous={continuous}, {kills} SIGKILLs"
        );
    }
}
