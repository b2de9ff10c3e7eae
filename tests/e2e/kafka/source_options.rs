//! Source options: starting offsets, partitions and topics added mid-run,
//! data loss both ways, and backpressure with a deliberately slow guest.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{Rec, add_partitions, broker, create_topic, produce, sorted_values, unique};
use crate::testkit::{guest, progress_of, progress_run};

/// A pipeline from `source` (the body of a `[[source]]` table) to a fresh
/// output topic, records unchanged unless `transform` names a table body.
struct Passthrough {
    dir: tempfile::TempDir,
    output: String,
}

impl Passthrough {
    fn new(source: &str, trigger: &str, extra: &str) -> Passthrough {
        let b = broker();
        let output = unique("out");
        create_topic(b, &output, 1, &[]);
        let spec = format!(
            r#"
checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
{source}
[sink.default]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{output}"
[trigger]
{trigger}
{extra}
"#
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.toml"), spec).unwrap();
        Passthrough { dir, output }
    }

    fn set_spec(&self, from: &str, to: &str) {
        let p = self.dir.path().join("p.toml");
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(s.contains(from), "{from} not in {s}");
        std::fs::write(&p, s.replace(from, to)).unwrap();
    }

    fn command(&self) -> std::process::Command {
        progress_run(&self.dir.path().join("p.toml"))
    }

    fn run(&self) -> std::process::Output {
        self.command().output().unwrap()
    }

    fn run_ok(&self) -> Vec<serde_json::Value> {
        progress_of(self.command()).0
    }

    fn spawn(&self) -> Child {
        self.command()
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn values(&self) -> Vec<String> {
        sorted_values(broker(), &self.output)
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Record timestamps: an hour ago, whole seconds (old timestamps would be
/// deleted at once by the broker's time-based retention).
fn base_ts() -> i64 {
    static BASE: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *BASE.get_or_init(|| (weir_engine::now_ms() - 3_600_000) / 1000 * 1000)
}

/// `n` records `p<partition>-<i>` per partition, timestamped base + 1000 i.
fn fill(topic: &str, partitions: i32, from: usize, n: usize) -> Vec<String> {
    fill_at(topic, partitions, from, n, true)
}

/// As [`fill`]; `past = false` stamps the records now (for topics with a
/// short retention, where hour-old records would be deleted at once).
fn fill_at(topic: &str, partitions: i32, from: usize, n: usize, past: bool) -> Vec<String> {
    let mut recs = Vec::new();
    for p in 0..partitions {
        for i in from..from + n {
            recs.push(Rec {
                partition: Some(p),
                key: None,
                value: format!("p{p}-{i}"),
                timestamp: past.then(|| base_ts() + 1000 * i as i64),
            });
        }
    }
    produce(broker(), topic, &recs);
    recs.into_iter().map(|r| r.value).collect()
}

fn until_output(p: &Passthrough, want: usize, child: &mut Child) -> Vec<String> {
    let started = Instant::now();
    loop {
        let v = p.values();
        if v.len() >= want || started.elapsed() > Duration::from_secs(90) {
            return v;
        }
        assert!(child.try_wait().unwrap().is_none(), "weir exited early");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn each_starting_offsets_variant_starts_where_it_says() {
    let input = unique("start");
    create_topic(broker(), &input, 2, &[]);
    let all = fill(&input, 2, 0, 10);
    let now = "type = \"available-now\"";
    let src = |starting: &str| format!("topics = [\"{input}\"]\n{starting}");

    let earliest = Passthrough::new(&src("starting-offsets = \"earliest\""), now, "");
    earliest.run_ok();
    assert_eq!(earliest.values(), sorted(all.clone()));

    let latest = Passthrough::new(&src("starting-offsets = \"latest\""), now, "");
    latest.run_ok();
    assert_eq!(latest.values(), Vec::<String>::new());

    let map = format!("starting-offsets = {{ \"{input}\" = {{ \"0\" = 4, \"1\" = -2 }} }}");
    let by_map = Passthrough::new(&src(&map), now, "");
    by_map.run_ok();
    let want: Vec<String> = all
        .iter()
        .filter(|v| !matches!(v.as_str(), "p0-0" | "p0-1" | "p0-2" | "p0-3"))
        .cloned()
        .collect();
    assert_eq!(by_map.values(), sorted(want));

    let at = format!("starting-timestamp = {}", base_ts() + 7000);
    let by_time = Passthrough::new(&src(&at), now, "");
    by_time.run_ok();
    let want = ["p0-7", "p0-8", "p0-9", "p1-7", "p1-8", "p1-9"].map(String::from);
    assert_eq!(by_time.values(), sorted(want.to_vec()));

    // New records after the start: every variant picks them up once.
    let more = fill(&input, 2, 10, 3);
    latest.run_ok();
    assert_eq!(latest.values(), sorted(more.clone()));
    by_time.run_ok();
    let mut want = want.to_vec();
    want.extend(more);
    assert_eq!(by_time.values(), sorted(want));
}

#[test]
fn partitions_and_topics_added_mid_run_are_picked_up() {
    let prefix = unique("grow");
    let first = format!("{prefix}-a");
    create_topic(broker(), &first, 2, &[]);
    let p = Passthrough::new(
        &format!("topic-pattern = \"{prefix}-.*\"\nstarting-offsets = \"earliest\""),
        "type = \"processing-time\"\ninterval = \"200ms\"",
        "",
    );
    let mut child = p.spawn();
    let mut want = fill(&first, 2, 0, 5);
    assert_eq!(until_output(&p, 10, &mut child).len(), 10);

    add_partitions(broker(), &first, 4);
    let second = format!("{prefix}-b");
    create_topic(broker(), &second, 1, &[]);
    let mut recs = Vec::new();
    for part in [2, 3] {
        for i in 0..5 {
            recs.push(Rec {
                partition: Some(part),
                key: None,
                value: format!("new-p{part}-{i}"),
                timestamp: None,
            });
        }
    }
    produce(broker(), &first, &recs);
    want.extend(recs.into_iter().map(|r| r.value));
    want.extend(fill(&second, 1, 100, 5));
    let got = until_output(&p, 25, &mut child);
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    assert_eq!(got, sorted(want));
}

#[test]
fn offsets_lost_to_retention_fail_or_are_skipped_and_counted() {
    let input = unique("loss");
    create_topic(broker(), &input, 1, &[]);
    let p = Passthrough::new(
        &format!("topics = [\"{input}\"]\nstarting-offsets = \"earliest\""),
        "type = \"available-now\"",
        "",
    );
    let first = fill_at(&input, 1, 0, 5, false);
    p.run_ok();
    assert_eq!(p.values(), sorted(first.clone()));
    // Records 5..10 go into a segment that is rolled and deleted before
    // the pipeline runs again: segments now roll every 200 ms and go a
    // second later.
    super::alter_topic(
        broker(),
        &input,
        &[("retention.ms", "1000"), ("segment.ms", "200")],
    );
    fill_at(&input, 1, 5, 5, false);
    let started = Instant::now();
    for i in 1000.. {
        std::thread::sleep(Duration::from_millis(400));
        // Appending rolls the aged segment, so retention can delete it.
        fill_at(&input, 1, i, 1, false);
        if super::low_watermark(broker(), &input, 0) > 5 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "retention never deleted the segment"
        );
    }
    // Keep what is there from now on, and add records after the gap.
    super::alter_topic(broker(), &input, &[("retention.ms", "-1")]);
    let after = fill_at(&input, 1, 2000, 3, false);
    let out = p.run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("are no longer in Kafka") && err.contains("fail-on-data-loss = false"),
        "{err}"
    );
    assert_eq!(
        p.values(),
        sorted(first.clone()),
        "nothing written on failure"
    );

    p.set_spec(
        "starting-offsets = \"earliest\"",
        "starting-offsets = \"earliest\"\nfail-on-data-loss = false",
    );
    let progress = p.run_ok();
    let lost: u64 = progress
        .iter()
        .map(|b| {
            b["sources"][0]["metrics"]["dataLossRecords"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .max()
        .unwrap();
    assert!(lost >= 5, "{progress:?}");
    let got = p.values();
    for v in first.iter().chain(&after) {
        assert!(got.contains(v), "{v} is missing: {got:?}");
    }
    for v in ["p0-5", "p0-6", "p0-7", "p0-8", "p0-9"] {
        assert!(!got.contains(&v.to_string()), "{v} was lost, yet written");
    }
    let mut dedup = got.clone();
    dedup.dedup();
    assert_eq!(dedup, got, "no duplicates");
}

#[test]
fn backpressure_shrinks_batches_to_a_slow_guests_rate() {
    let input = unique("slow");
    create_topic(broker(), &input, 2, &[]);
    let all = fill(&input, 2, 0, 1500);
    let p = Passthrough::new(
        &format!(
            "topics = [\"{input}\"]\nstarting-offsets = \"earliest\"\nmax-offsets-per-trigger = 1000"
        ),
        "type = \"processing-time\"\ninterval = \"200ms\"",
        &format!(
            "[backpressure]\nmin-rate = 10\n[transform]\ncomponent = \"{}\"\nconfig.spin-per-record = 1000000",
            guest("misbehave").display()
        ),
    );
    let mut child = p.spawn();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut batches = Vec::new();
    let mut total = 0;
    for line in lines {
        let b: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        total += b["numInputRows"].as_u64().unwrap();
        batches.push(b);
        if total >= 3000 {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let rows = |b: &serde_json::Value| b["numInputRows"].as_u64().unwrap() as f64;
    assert_eq!(
        rows(&batches[0]),
        1000.0,
        "no rate measured yet: the source's cap"
    );
    // From then on each batch is sized to the measured rate x 200 ms.
    let rate = batches[0]["processedRowsPerSecond"].as_f64().unwrap();
    for b in &batches[2..] {
        assert!(
            rows(b) <= (rate * 0.2 * 3.0).max(50.0),
            "batch of {} rows at ~{rate:.0} rows/s: {b}",
            rows(b)
        );
        assert!(
            b["sources"][0]["metrics"]["backpressureLimit"].is_string(),
            "{b}"
        );
    }
    assert!(batches.len() > 3, "{batches:?}");
    assert_eq!(p.values(), sorted(all));
}
