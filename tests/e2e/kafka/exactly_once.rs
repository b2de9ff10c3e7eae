//! Kafka -> WASM -> Kafka, exactly once in both modes: straight through,
//! after a SIGKILL at every fault point, and after SIGKILLs at random
//! moments, checked with a read_committed consumer.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use super::{broker, create_topic, produce_numbers, sorted_values, unique};
use crate::microbatch::FAULT_POINTS;
use crate::testkit::{guest, weir, xorshift};

pub(crate) struct Pipeline {
    pub dir: tempfile::TempDir,
    pub bootstrap: String,
    pub input: String,
    pub output: String,
    pub n: usize,
    pub continuous: bool,
    /// Continuous: run until stopped instead of exiting once idle.
    forever: bool,
}

impl Pipeline {
    /// `n` records on a 3-partition input topic, uppercased into a
    /// 2-partition output topic; micro-batches of at most `batch` records.
    pub fn new(n: usize, batch: usize, continuous: bool) -> Pipeline {
        Self::on(broker(), n, batch, continuous, "")
    }

    pub fn on(bootstrap: &str, n: usize, batch: usize, continuous: bool, extra: &str) -> Pipeline {
        let input = unique("in");
        let output = unique("out");
        create_topic(bootstrap, &input, 3, &[]);
        create_topic(bootstrap, &output, 2, &[]);
        produce_numbers(bootstrap, &input, 0, n);
        let mode = if continuous {
            "mode = \"continuous\"\ncheckpoint-interval = \"50ms\"".to_string()
        } else {
            String::new()
        };
        let trigger = if continuous {
            String::new()
        } else {
            "[trigger]\ntype = \"available-now\"".to_string()
        };
        let limit = if continuous {
            String::new()
        } else {
            format!("max-offsets-per-trigger = {batch}")
        };
        let spec = format!(
            r#"
name = "kafka-golden"
checkpoint = "ckpt"
{mode}
[[source]]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topics = ["{input}"]
starting-offsets = "earliest"
{limit}
{extra}
[transform]
component = "{uppercase}"
[sink.default]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topic = "{output}"
{trigger}
"#,
            uppercase = guest("uppercase").display()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.toml"), spec).unwrap();
        Pipeline {
            dir,
            bootstrap: bootstrap.into(),
            input,
            output,
            n,
            continuous,
            forever: false,
        }
    }

    pub fn set_trigger(&self, trigger: &str) {
        let path = self.dir.path().join("p.toml");
        let spec = std::fs::read_to_string(&path).unwrap();
        let spec = spec.replace("[trigger]\ntype = \"available-now\"", trigger);
        std::fs::write(path, spec).unwrap();
    }

    /// The pipeline's clients connect to `address` (a proxy in front of
    /// the broker) instead; the test's own clients keep the direct address.
    pub fn connect_through(&self, address: &str) {
        let path = self.dir.path().join("p.toml");
        let spec = std::fs::read_to_string(&path).unwrap();
        let from = format!("bootstrap-servers = \"{}\"", self.bootstrap);
        let spec = spec.replace(&from, &format!("bootstrap-servers = \"{address}\""));
        std::fs::write(path, spec).unwrap();
    }

    pub fn continuous_forever(&mut self) {
        self.forever = true;
    }

    pub fn command(&self) -> std::process::Command {
        let mut c = weir();
        c.arg("run")
            .arg(self.dir.path().join("p.toml"))
            .args(["--progress", "none"]);
        if self.continuous && !self.forever {
            c.args(["--exit-when-idle", "1s"]);
        }
        c.stdout(Stdio::null()).stderr(Stdio::piped());
        c
    }

    pub fn run_to_end(&self) {
        let out = self.command().output().unwrap();
        assert!(
            out.status.success(),
            "weir run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn output(&self) -> Vec<String> {
        sorted_values(&self.bootstrap, &self.output)
    }

    /// Every input record uppercased, once.
    /// Compare with the expected output, describing the difference briefly.
    pub fn check(&self, when: &str) {
        let got = self.output();
        let want = self.expected();
        if got != want {
            let missing = want.iter().filter(|w| !got.contains(w)).count();
            let mut dups = got.clone();
            dups.dedup();
            panic!(
                "{when}: {} records out, {} expected; {missing} missing, {} duplicated; first missing: {:?}",
                got.len(),
                want.len(),
                got.len() - dups.len(),
                want.iter().find(|w| !got.contains(w))
            );
        }
    }

    pub fn expected(&self) -> Vec<String> {
        let mut v: Vec<String> = (0..self.n)
            .map(|i| format!(r#"{{"id":{i},"name":"record {i}"}}"#).to_uppercase())
            .collect();
        v.sort();
        v
    }
}

fn straight_and_every_fault_point(continuous: bool) {
    let p = Pipeline::new(600, 100, continuous);
    p.run_to_end();
    p.check("straight through");
    p.run_to_end();
    p.check("a second run adds nothing");
    for point in FAULT_POINTS {
        let p = Pipeline::new(600, 100, continuous);
        // Micro-batch: batch 1, after one committed batch. Continuous: the
        // first epoch with data (which one depends on the first fetch).
        let fault = if continuous {
            point.to_string()
        } else {
            format!("{point}@1")
        };
        let out = p.command().env("WEIR_FAULT", fault).output().unwrap();
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{point}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        p.run_to_end();
        p.check(&format!("after a SIGKILL at {point}"));
    }
}

fn random_kills(continuous: bool, seed: u64) {
    let mut next = xorshift(seed);
    let p = Pipeline::new(5000, 250, continuous);
    for kill in 0..12 {
        let mut child = p.command().spawn().unwrap();
        std::thread::sleep(Duration::from_millis(100 + next() % 1200));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(
            status.signal() == Some(9) || status.success(),
            "kill {kill}: {status:?}"
        );
    }
    p.run_to_end();
    p.check("after 12 random SIGKILLs");
}

#[test]
fn micro_batch_kafka_to_kafka_exactly_once_across_sigkill_at_every_step() {
    straight_and_every_fault_point(false);
}

#[test]
fn continuous_kafka_to_kafka_exactly_once_across_sigkill_at_every_step() {
    straight_and_every_fault_point(true);
}

#[test]
fn micro_batch_kafka_to_kafka_exactly_once_across_random_sigkills() {
    random_kills(false, 0x9e37_79b9_7f4a_7c15);
}

#[test]
fn continuous_kafka_to_kafka_exactly_once_across_random_sigkills() {
    random_kills(true, 0xbf58_476d_1ce4_e5b9);
}

/// The documented example pipelines run as written, pointed at the test
/// broker (and, for micro-batch, stopping once the input is drained).
#[test]
fn the_kafka_example_pipelines_run() {
    for (file, continuous) in [("kafka.toml", false), ("kafka-continuous.toml", true)] {
        let b = broker();
        let p = Pipeline::new(0, 1, continuous);
        produce_numbers(b, &p.input, 0, 500);
        let example = crate::testkit::repo_root()
            .join("examples/pipelines")
            .join(file);
        let mut spec = std::fs::read_to_string(&example).unwrap();
        for (from, to) in [
            ("127.0.0.1:9092", b.to_string()),
            ("\"events\"", format!("\"{}\"", p.input)),
            ("\"events-upper\"", format!("\"{}\"", p.output)),
            (
                "../rust/target/wasm32-wasip2/release/uppercase.wasm",
                guest("uppercase").display().to_string(),
            ),
        ] {
            assert!(spec.contains(from), "{file} no longer has {from}");
            spec = spec.replace(from, &to);
        }
        let spec = spec
            .lines()
            .map(|l| {
                if l.starts_with("checkpoint =") {
                    "checkpoint = \"ckpt\""
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            .replace(
                "type = \"processing-time\"\ninterval = \"1s\"",
                "type = \"available-now\"",
            )
            .replace("[backpressure]\nmin-rate = 100", "");
        std::fs::write(p.dir.path().join("p.toml"), spec).unwrap();
        p.run_to_end();
        let want: Vec<String> = {
            let mut v: Vec<String> = (0..500)
                .map(|i| format!(r#"{{"id":{i},"name":"record {i}"}}"#).to_uppercase())
                .collect();
            v.sort();
            v
        };
        assert_eq!(p.output(), want, "{file}");
    }
}
