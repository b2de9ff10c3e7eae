//! The cluster's nodes: `weir serve --cluster` processes sharing the test
//! broker (their control plane) and one bucket of the S3 server (components
//! and checkpoints), each with its own data directory; started, SIGKILLed,
//! stopped (SIGSTOP) and resumed (SIGCONT) by the test.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::serve::Server;
use crate::testkit::{s3_bucket, s3_env};

/// Partitions of the slots topic, as every node is configured.
pub(super) const SLOTS: u64 = 12;
/// A node silent this long loses its slots.
pub(super) const SESSION: Duration = Duration::from_secs(6);

/// One `weir serve --cluster` process.
pub(super) struct Node {
    /// `node-<k>`, as its cluster file names it.
    pub name: String,
    pub server: Server,
    /// SIGSTOPped (and not resumed): it answers nothing, so nothing asks it.
    stopped: bool,
}

impl Node {
    fn signal(&self, sig: i32) {
        // SAFETY: a signal to a child process this test started.
        let r = unsafe { libc::kill(self.server.pid() as i32, sig) };
        assert_eq!(r, 0, "signal {sig} to {}", self.name);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Resumed first, so that `Serve`'s SIGKILL and wait (its own drop,
        // after this) find a running process. No assertion: this may run
        // while a failed test unwinds.
        if self.stopped {
            // SAFETY: as in `signal`.
            unsafe { libc::kill(self.server.pid() as i32, libc::SIGCONT) };
        }
    }
}

/// The nodes of one cluster (one topic prefix, one bucket).
pub(super) struct Cluster {
    dir: tempfile::TempDir,
    bootstrap: String,
    pub bucket: String,
    pub prefix: String,
    /// Node `k` (from 1) at index `k - 1`; `None` once SIGKILLed.
    nodes: Vec<Option<Node>>,
    /// What killed nodes logged last.
    dead_logs: Vec<String>,
    /// The admin token node 1 printed; every node takes it.
    pub admin: String,
}

impl Cluster {
    /// `n` nodes on the broker at `bootstrap`, started one after another.
    pub fn start(bootstrap: &str, n: usize) -> Cluster {
        let mut c = Cluster {
            dir: tempfile::tempdir().unwrap(),
            bootstrap: bootstrap.to_string(),
            bucket: s3_bucket("cluster"),
            prefix: crate::kafka::unique("weir-cluster"),
            nodes: Vec::new(),
            dead_logs: Vec::new(),
            admin: String::new(),
        };
        for _ in 0..n {
            c.add_node();
        }
        c
    }

    /// The cluster file of node `name`: the same for every node but `node`.
    fn cluster_file(&self, name: &str) -> String {
        format!(
            r#"bootstrap-servers = "{bootstrap}"
topic-prefix = "{prefix}"
slots = {SLOTS}
session-timeout = "{session}s"
object-store = "s3://{bucket}/cluster"
node = "{name}"
"#,
            bootstrap = self.bootstrap,
            prefix = self.prefix,
            session = SESSION.as_secs(),
            bucket = self.bucket,
        )
    }

    /// Start node `k` = one more than started so far: the first prints the
    /// admin token on its first line, the others are given it.
    pub fn add_node(&mut self) {
        let k = self.nodes.len() + 1;
        let node = self.spawn(k);
        self.nodes.push(Some(node));
    }

    /// Stop node `k` as an orchestrator does (a rolling restart's first
    /// half): SIGTERM, then wait for its exit. Returns when it exited.
    pub fn terminate(&mut self, k: usize) -> Instant {
        let mut n = self.nodes[k - 1].take().expect("a live node");
        let status = n.server.terminate();
        let exited = Instant::now();
        assert!(status.success(), "node-{k} exited with {status} on SIGTERM");
        self.dead_logs.push(format!(
            "--- {} (before its restart) ---\n{}",
            n.name,
            n.server.log_tail()
        ));
        exited
    }

    /// Start node `k` again over its data directory, with its name.
    pub fn start_again(&mut self, k: usize) {
        assert!(self.nodes[k - 1].is_none(), "node-{k} is running");
        self.nodes[k - 1] = Some(self.spawn(k));
    }

    fn spawn(&mut self, k: usize) -> Node {
        let name = format!("node-{k}");
        let file = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(&file, self.cluster_file(&name)).unwrap();
        let data = self.dir.path().join(&name);
        let mut env = s3_env();
        env.push((super::guest_env::SECRET.into(), "s3cr3t".into()));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let file = file.display().to_string();
        let serve = crate::testkit::Serve::spawn_with(
            &data,
            &["--cluster", file.as_str()],
            (!self.admin.is_empty()).then_some(self.admin.as_str()),
            &env,
            None,
        );
        if self.admin.is_empty() {
            assert!(
                serve.admin.starts_with("weir_"),
                "node-1 printed no admin token: {:?}\n{}",
                serve.admin,
                serve.log_tail()
            );
            self.admin = serve.admin.clone();
        }
        Node {
            name,
            server: Server::wrap(serve),
            stopped: false,
        }
    }

    fn node(&self, k: usize) -> &Node {
        self.nodes[k - 1]
            .as_ref()
            .unwrap_or_else(|| panic!("node-{k} was killed"))
    }

    fn node_mut(&mut self, k: usize) -> &mut Node {
        self.nodes[k - 1]
            .as_mut()
            .unwrap_or_else(|| panic!("node-{k} was killed"))
    }

    /// Node `k`'s API (it must be live: a stopped node would never answer).
    pub fn server(&self, k: usize) -> &Server {
        let n = self.node(k);
        assert!(!n.stopped, "node-{k} is stopped: it would not answer");
        &n.server
    }

    /// The nodes that answer: started, neither killed nor stopped.
    pub fn live(&self) -> Vec<&Node> {
        self.nodes.iter().flatten().filter(|n| !n.stopped).collect()
    }

    pub fn live_names(&self) -> BTreeSet<String> {
        self.live().into_iter().map(|n| n.name.clone()).collect()
    }

    /// A node that answers (the first started of them).
    pub fn any(&self) -> &Server {
        &self.live().first().expect("no live node").server
    }

    /// SIGKILL node `k` (and wait for it): `Serve` does so when dropped.
    pub fn kill(&mut self, k: usize) {
        let n = self.nodes[k - 1].take().expect("killed once");
        self.dead_logs.push(format!(
            "--- {} (killed) ---\n{}",
            n.name,
            n.server.log_tail()
        ));
        drop(n);
    }

    /// SIGSTOP node `k`: it keeps its sockets and its state, and says nothing.
    pub fn stop(&mut self, k: usize) {
        let n = self.node_mut(k);
        n.signal(libc::SIGSTOP);
        n.stopped = true;
    }

    /// SIGCONT node `k`, stopped before.
    pub fn resume(&mut self, k: usize) {
        let n = self.node_mut(k);
        assert!(n.stopped, "{} was not stopped", n.name);
        n.signal(libc::SIGCONT);
        n.stopped = false;
    }

    /// The newest lines every node logged, for a failure's message.
    pub fn logs(&self) -> String {
        let mut out = self.dead_logs.clone();
        for n in self.nodes.iter().flatten() {
            let note = if n.stopped { " (stopped)" } else { "" };
            let tail: Vec<String> = n
                .server
                .log_tail()
                .lines()
                .rev()
                .take(40)
                .map(String::from)
                .collect();
            let tail: Vec<String> = tail.into_iter().rev().collect();
            out.push(format!("--- {}{note} ---\n{}", n.name, tail.join("\n")));
        }
        out.join("\n")
    }
}

/// Call `probe` until it answers `Ok` (its value), a short pause between
/// calls; past `deadline`, fail with `what`, the probe's last answer and
/// `context()`.
pub(super) fn wait_until<T>(
    deadline: Instant,
    what: &str,
    mut probe: impl FnMut() -> Result<T, String>,
    context: &dyn Fn() -> String,
) -> T {
    loop {
        match probe() {
            Ok(v) => return v,
            Err(last) => {
                assert!(
                    Instant::now() < deadline,
                    "{what}: not by the deadline; last: {last}\n{}",
                    context()
                );
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
}
