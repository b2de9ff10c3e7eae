//! Group mode on the real broker: several `weir run` processes of one
//! pipeline share a 12-partition topic through a consumer group. Output is
//! read with `read_committed` and must hold every input exactly once,
//! through a SIGKILLed member, a member started late, and a member stopped
//! (SIGSTOP) past its session timeout and then resumed (its late commit is
//! fenced). The windowed count's output equals a reference computed here.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

pub(crate) mod windows;

use super::{broker, create_topic, sorted_values, unique};
use crate::testkit::{guest, weir};

/// One pipeline and the `weir run` processes running it.
pub(crate) struct Group {
    dir: tempfile::TempDir,
    members: Vec<Child>,
    bootstrap: String,
}

impl Group {
    /// Micro-batch every 200 ms; `continuous`: epochs of 200 ms.
    fn new(input: &str, output: &str, component: &str, extra: &str, continuous: bool) -> Group {
        Self::on(broker(), input, output, component, extra, continuous)
    }

    /// [`Group::new`] on the broker at `bootstrap`.
    pub(crate) fn on(
        bootstrap: &str,
        input: &str,
        output: &str,
        component: &str,
        extra: &str,
        continuous: bool,
    ) -> Group {
        let mode = if continuous {
            "mode = \"continuous\"\ncheckpoint-interval = \"200ms\""
        } else {
            ""
        };
        let trigger = if continuous {
            ""
        } else {
            "[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\""
        };
        let bootstrap = bootstrap.to_string();
        let group = unique("group");
        let spec = format!(
            r#"
name = "grouped"
checkpoint = "ckpt"
{mode}
[group]
id = "{group}"
session-timeout = "6s"
[[source]]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topics = ["{input}"]
starting-offsets = "earliest"
max-offsets-per-trigger = 20000
[transform]
component = "{component}"
on-error = "fail"
[sink.default]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topic = "{output}"
transaction-timeout = "10s"
{trigger}
{extra}
"#,
            component = guest(component).display()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.toml"), spec).unwrap();
        Group {
            dir,
            members: Vec::new(),
            bootstrap,
        }
    }

    /// Start one more member; its log goes to `member-<n>.log`.
    pub(crate) fn start(&mut self) {
        self.start_with(None);
    }

    /// Start a member whose clients connect to the broker at `address` (a
    /// fault proxy in front of it), from a copy of the pipeline file beside
    /// the original (same checkpoint).
    pub(crate) fn start_through(&mut self, address: &str) {
        let n = self.members.len();
        let spec = std::fs::read_to_string(self.dir.path().join("p.toml")).unwrap();
        let spec = spec.replace(
            &format!("bootstrap-servers = \"{}\"", self.bootstrap),
            &format!("bootstrap-servers = \"{address}\""),
        );
        let path = self.dir.path().join(format!("p-{n}.toml"));
        std::fs::write(&path, spec).unwrap();
        self.spawn(&path, None);
    }

    /// Start a member that SIGKILLs itself at `fault` (`WEIR_FAULT`).
    fn start_with(&mut self, fault: Option<&str>) {
        let path = self.dir.path().join("p.toml");
        self.spawn(&path, fault);
    }

    fn spawn(&mut self, spec: &std::path::Path, fault: Option<&str>) {
        let n = self.members.len();
        let log = std::fs::File::create(self.dir.path().join(format!("member-{n}.log"))).unwrap();
        let child = weir()
            .arg("run")
            .arg(spec)
            .args(["--progress", "none", "--metrics", "127.0.0.1:0"])
            .env("WEIR_LOG", "info")
            .envs(fault.map(|f| ("WEIR_FAULT", f)))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.members.push(child);
    }

    fn signal(&self, member: usize, sig: i32) {
        // SAFETY: a signal to a child this test started.
        unsafe { libc::kill(self.members[member].id() as i32, sig) };
    }

    /// The partitions member `n` holds, as its `/metrics` says
    /// (`weir_group_partition_held` = 1); `None` while the member has not
    /// started serving its metrics yet.
    fn held(&self, n: usize) -> Option<std::collections::BTreeSet<u32>> {
        use std::io::{Read, Write};
        let log = self.log_of(n);
        let addr = log
            .split("serving metrics on http://")
            .nth(1)
            // The whole address: the line may be half written yet.
            .and_then(|r| r.split_once("/metrics"))
            .map(|(a, _)| a)?;
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        write!(
            conn,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).unwrap();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        let held = text
            .lines()
            .filter(|l| l.starts_with("weir_group_partition_held{") && l.ends_with(" 1"))
            .map(|l| {
                l.split("partition=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        Some(held)
    }

    /// Wait (up to 60 s) until each of `members` holds a share and together
    /// they hold all 12 partitions, none twice, as their `/metrics` say: a
    /// rebalance has settled.
    pub(crate) fn wait_until_held_by(&self, members: &[usize]) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // A member just started may not serve its metrics yet: it
            // holds nothing so far.
            let held: Vec<_> = members
                .iter()
                .map(|&n| self.held(n).unwrap_or_default())
                .collect();
            let mut all: Vec<u32> = held.iter().flatten().copied().collect();
            all.sort();
            if all == (0..12).collect::<Vec<u32>>() && held.iter().all(|h| !h.is_empty()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "members {members:?} hold {held:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn log_of(&self, n: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("member-{n}.log"))).unwrap_or_default()
    }

    pub(crate) fn logs(&self) -> String {
        (0..self.members.len())
            .map(|n| {
                let text = std::fs::read_to_string(self.dir.path().join(format!("member-{n}.log")))
                    .unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                format!(
                    "--- member {n} ---\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stop every member still running (SIGTERM, then wait).
    pub(crate) fn stop_all(&mut self) {
        for (i, m) in self.members.iter_mut().enumerate() {
            if m.try_wait().unwrap().is_none() {
                // SAFETY: as in `signal`.
                unsafe { libc::kill(m.id() as i32, libc::SIGCONT) };
                unsafe { libc::kill(m.id() as i32, libc::SIGTERM) };
                let status = m.wait().unwrap();
                assert!(status.success(), "member {i} ended with {status}");
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}

/// Records produced with Kafka's default (Java) partitioner, murmur2 of
/// the key, as weir's state partitioning expects.
pub(crate) fn produce(bootstrap: &str, topic: &str, records: &[(String, String, i64)]) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("partitioner", "murmur2_random")
        .set("linger.ms", "20")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    for (k, v, ts) in records {
        let mut rec = BaseRecord::<str, str>::to(topic)
            .key(k)
            .payload(v)
            .timestamp(*ts);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((_, back)) => {
                    rec = back;
                    p.poll(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60)).unwrap();
}

/// Counts a topic's committed records as they appear.
pub(crate) struct Tail {
    consumer: BaseConsumer,
    seen: usize,
}

impl Tail {
    pub(crate) fn new(bootstrap: &str, topic: &str, partitions: i32) -> Tail {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("isolation.level", "read_committed")
            .set("group.id", "weir-test-tail")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .unwrap();
        }
        consumer.assign(&tpl).unwrap();
        Tail { consumer, seen: 0 }
    }

    /// Wait until at least `n` records are committed or `timeout` passes.
    fn reach(&mut self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.seen < n && Instant::now() < deadline {
            if let Some(Ok(_)) = self.consumer.poll(Duration::from_millis(100)) {
                self.seen += 1;
            }
        }
    }

    /// Wait until at least `n` records are committed (or panic with `why`).
    pub(crate) fn wait_for(&mut self, n: usize, timeout: Duration, why: &dyn Fn() -> String) {
        self.reach(n, timeout);
        assert!(
            self.seen >= n,
            "only {} of {n} records committed after {timeout:?}\n{}",
            self.seen,
            why()
        );
    }
}

/// Event times near now: the test broker deletes segments whose records
/// are older than its retention within a second.
pub(crate) fn base() -> i64 {
    static BASE: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *BASE.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    })
}

pub(crate) fn values(from: usize, n: usize) -> Vec<(String, String, i64)> {
    (from..from + n)
        .map(|i| {
            (
                format!("k{}", i % 101),
                format!(r#"{{"id":{i},"name":"record {i}"}}"#),
                base() + i as i64,
            )
        })
        .collect()
}

#[test]
fn group_members_share_a_topic_exactly_once_through_kills_and_stalls() {
    const N: usize = 1_000_000;
    let bootstrap = broker();
    let (input, output) = (unique("group-in"), unique("group-out"));
    create_topic(bootstrap, &input, 12, &[]);
    create_topic(bootstrap, &output, 4, &[]);
    let mut g = Group::new(&input, &output, "uppercase", "", false);
    let mut tail = Tail::new(bootstrap, &output, 4);
    produce(bootstrap, &input, &values(0, 400_000));
    for _ in 0..3 {
        g.start();
    }
    let logs = || g.logs();
    tail.wait_for(100_000, Duration::from_secs(120), &logs);
    // One member dies mid-run: its partitions move once its session ends
    // (and its open transaction, if any, is aborted by the broker).
    g.signal(0, libc::SIGKILL);
    produce(bootstrap, &input, &values(400_000, 300_000));
    let logs = || g.logs();
    tail.wait_for(450_000, Duration::from_secs(120), &logs);
    // Another stalls past its session timeout: the group moves on without
    // it (the live members, one started meanwhile, hold every partition;
    // a stopped process cannot answer /metrics, so it is not asked).
    g.signal(1, libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(9));
    g.start();
    produce(bootstrap, &input, &values(700_000, 300_000));
    g.wait_until_held_by(&[2, 3]);
    // Resumed, the stalled member's batch in flight (if any) is fenced:
    // the output below holds every record once.
    g.signal(1, libc::SIGCONT);
    let logs = || g.logs();
    tail.wait_for(N, Duration::from_secs(240), &logs);
    // Nothing more arrives: no duplicates committed late.
    std::thread::sleep(Duration::from_secs(3));
    g.stop_all();
    assert_uppercased_once(&g, bootstrap, &output, N, "");
}

/// `output` holds `values(0, n)` uppercased, each once (`context` and the
/// members' logs say where, when not).
pub(crate) fn assert_uppercased_once(
    g: &Group,
    bootstrap: &str,
    output: &str,
    n: usize,
    context: &str,
) {
    let got = sorted_values(bootstrap, output);
    let mut expected: Vec<String> = values(0, n)
        .into_iter()
        .map(|(_, v, _)| v.to_uppercase())
        .collect();
    expected.sort();
    assert_eq!(got.len(), expected.len(), "{context}{}", g.logs());
    assert!(
        got == expected,
        "{context}output differs from the input, uppercased, exactly once"
    );
}
