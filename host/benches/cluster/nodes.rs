//! The benchmark's cluster: `weir serve --cluster` nodes on one broker and
//! one bucket of the S3 server, started as tests/e2e/cluster/nodes.rs
//! starts them; their HTTP API, `GET /v1/cluster`, and what /proc says of
//! each node's process.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weir_testkit::{self as testkit, Serve, s3_bucket, s3_env};

/// Partitions of the slots topic, as every node is configured.
const SLOTS: u64 = 12;
/// A node silent this long loses its slots.
const SESSION_SECS: u64 = 6;

/// The nodes of one cluster (one topic prefix, one bucket).
pub struct Cluster {
    /// Node `k` (from 1) at index `k - 1`; `None` while killed. First, so
    /// the nodes are killed (`Serve`'s drop) before their directory goes.
    nodes: Vec<Option<Serve>>,
    dir: tempfile::TempDir,
    bootstrap: String,
    bucket: String,
    prefix: String,
    /// The admin token node 1 printed; every other node is given it.
    pub admin: String,
    http: ureq::Agent,
}

impl Cluster {
    /// `n` nodes on the broker at `bootstrap`, started one after another.
    pub fn start(bootstrap: &str, n: usize) -> Cluster {
        let mut c = Cluster {
            nodes: Vec::new(),
            dir: tempfile::tempdir().unwrap(),
            bootstrap: bootstrap.to_string(),
            bucket: s3_bucket("bench-cluster"),
            prefix: format!("weir-bench-{}", uuid::Uuid::new_v4().simple()),
            admin: String::new(),
            http: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
        };
        for k in 1..=n {
            let s = c.spawn(k);
            c.nodes.push(Some(s));
        }
        c.settled(n);
        c
    }

    /// Wait until `n` live nodes hold every slot between them, each at
    /// least one: the group has settled, so what is measured next is not
    /// a rebalance of the nodes just started.
    fn settled(&self, n: usize) {
        let until = Instant::now() + Duration::from_secs(120);
        loop {
            let v = self.view();
            let holders: Vec<u64> = v["nodes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|x| x["alive"] == true)
                        .map(|x| x["slots"].as_array().map_or(0, |s| s.len() as u64))
                        .filter(|&s| s > 0)
                        .collect()
                })
                .unwrap_or_default();
            if holders.len() == n && holders.iter().sum::<u64>() == SLOTS {
                return;
            }
            assert!(
                Instant::now() < until,
                "the nodes' group never settled: {v}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Start node `k` over its data directory with its cluster file (the
    /// same for every node but `node`): the first prints the admin token.
    fn spawn(&mut self, k: usize) -> Serve {
        let name = format!("node-{k}");
        let file = self.dir.path().join(format!("{name}.toml"));
        let text = format!(
            "bootstrap-servers = \"{}\"\ntopic-prefix = \"{}\"\nslots = {SLOTS}\n\
             session-timeout = \"{SESSION_SECS}s\"\nobject-store = \"s3://{}/cluster\"\nnode = \"{name}\"\n",
            self.bootstrap, self.prefix, self.bucket
        );
        std::fs::write(&file, text).unwrap();
        let env = s3_env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let file = file.display().to_string();
        let serve = Serve::spawn_with(
            &self.dir.path().join(&name),
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
        serve
    }

    /// SIGKILL node `k` and wait for its exit (`Serve`'s drop does both).
    pub fn kill(&mut self, k: usize) {
        drop(self.nodes[k - 1].take().expect("a live node"));
    }

    /// Start node `k` again, killed before: same data directory, name and
    /// cluster file, given the admin token (so it prints none).
    pub fn restart(&mut self, k: usize) {
        assert!(self.nodes[k - 1].is_none(), "node-{k} is running");
        let s = self.spawn(k);
        self.nodes[k - 1] = Some(s);
    }

    /// The numbers (from 1) of the nodes running.
    pub fn live(&self) -> Vec<usize> {
        (1..=self.nodes.len())
            .filter(|k| self.nodes[k - 1].is_some())
            .collect()
    }

    fn node(&self, k: usize) -> &Serve {
        self.nodes[k - 1]
            .as_ref()
            .unwrap_or_else(|| panic!("node-{k} is down"))
    }

    /// (status, JSON body or null); status 0 and the error when the
    /// request did not get an answer.
    pub fn call(
        &self,
        k: usize,
        method: &str,
        path: &str,
        token: &str,
        body: Option<&[u8]>,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.node(k).base);
        let auth = format!("Bearer {token}");
        let r = match (method, body) {
            ("GET", _) => self.http.get(&url).header("Authorization", &auth).call(),
            ("PUT", Some(b)) => self.http.put(&url).header("Authorization", &auth).send(b),
            (_, Some(b)) => self
                .http
                .post(&url)
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(b),
            _ => self
                .http
                .post(&url)
                .header("Authorization", &auth)
                .send_empty(),
        };
        match r {
            Ok(mut r) => {
                let status = r.status().as_u16();
                let text = r.body_mut().read_to_string().unwrap_or_default();
                (status, serde_json::from_str(&text).unwrap_or(Value::Null))
            }
            Err(e) => (0, Value::String(e.to_string())),
        }
    }

    /// Every live node answers `token`'s `GET path` with 200 (it has read
    /// what node 1 wrote) within a minute.
    fn known_everywhere(&self, token: &str, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for k in self.live() {
            loop {
                match self.call(k, "GET", path, token, None) {
                    (200, _) => break,
                    (st, v) => assert!(
                        Instant::now() < deadline,
                        "node-{k}: GET {path}: {st} {v}\n{}",
                        self.logs()
                    ),
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }

    /// Tenant `bench` (created by the admin on node 1), allowed the broker,
    /// room for `pipelines`, the uppercase guest uploaded through node 1;
    /// once every node knows both: its token and the component's id.
    pub fn tenant(&self, pipelines: usize) -> (String, String) {
        let body = json!({
            "name": "bench",
            "kafka-brokers": [self.bootstrap],
            "max-pipelines": pipelines,
            "max-memory": "64GiB",
            "max-requests-per-second": 100_000,
        });
        let body = body.to_string();
        let (st, v) = self.call(1, "POST", "/v1/tenants", &self.admin, Some(body.as_bytes()));
        assert_eq!(st, 201, "{v}");
        let token = v["token"].as_str().unwrap().to_string();
        self.known_everywhere(&token, "/v1/components");
        let wasm = std::fs::read(testkit::guest("uppercase")).unwrap();
        let (st, c) = self.call(1, "POST", "/v1/components", &token, Some(&wasm));
        assert!(st == 201 || st == 200, "{st} {c}");
        let id = c["id"].as_str().unwrap().to_string();
        self.known_everywhere(&token, &format!("/v1/components/{id}"));
        (token, id)
    }

    /// PUT pipeline `name` through node `k`; a node busy (429, 503, no
    /// answer) is asked again, for up to a minute.
    pub fn put(&self, k: usize, token: &str, name: &str, spec: &str) -> Result<(), String> {
        let path = format!("/v1/pipelines/{name}");
        let mut tries = 0;
        loop {
            tries += 1;
            match self.call(k, "PUT", &path, token, Some(spec.as_bytes())) {
                (200 | 201, _) => return Ok(()),
                (0 | 429 | 503, _) if tries < 60 => std::thread::sleep(Duration::from_secs(1)),
                (st, v) => return Err(format!("PUT {path} through node-{k}: {st} {v}")),
            }
        }
    }

    /// `GET /v1/cluster` as the first live node answers it.
    pub fn view(&self) -> Value {
        let k = self.live()[0];
        match self.call(k, "GET", "/v1/cluster", &self.admin, None) {
            (200, v) => v,
            (st, v) => panic!("node-{k}: GET /v1/cluster: {st} {v}\n{}", self.logs()),
        }
    }

    /// What node `k`'s process is using.
    pub fn usage(&self, k: usize) -> weir_testkit::ProcessUsage {
        weir_testkit::process_usage(self.node(k).pid())
    }

    /// The newest lines every live node logged, for a failure's message.
    pub fn logs(&self) -> String {
        let mut out = Vec::new();
        for k in self.live() {
            let tail = self.node(k).log_tail();
            let lines: Vec<&str> = tail.lines().collect();
            let from = lines.len().saturating_sub(30);
            out.push(format!("--- node-{k} ---\n{}", lines[from..].join("\n")));
        }
        out.join("\n")
    }
}

/// Pipelines each node runs, as `GET /v1/cluster` says (`nodes[]`).
pub fn per_node(view: &Value) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = view["nodes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    let name = n["node"].as_str().unwrap_or("?").to_string();
                    (name, n["pipelines"].as_u64().unwrap_or(0))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `node-1: 4, node-2: 5, ...`.
pub fn show(per_node: &[(String, u64)]) -> String {
    let parts: Vec<String> = per_node.iter().map(|(n, p)| format!("{n}: {p}")).collect();
    parts.join(", ")
}

/// The pipelines `GET /v1/cluster` shows running.
pub fn running(view: &Value) -> usize {
    view["pipelines"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|p| p["state"] == "running").count())
}

/// Pipelines not running, with their state and nodes (for a message).
pub fn not_running(view: &Value) -> String {
    let a = view["pipelines"].as_array().cloned().unwrap_or_default();
    let rest: Vec<String> = a
        .iter()
        .filter(|p| p["state"] != "running")
        .take(10)
        .map(|p| format!("{} {} on {}", p["name"], p["state"], p["nodes"]))
        .collect();
    rest.join("; ")
}
