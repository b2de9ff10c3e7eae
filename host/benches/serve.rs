//! `weir serve` under load, through its HTTP API as users drive it (the
//! release `weir` binary, a real HTTP client, embedded-log pipelines of the
//! `uppercase` guest with the default trigger):
//!
//! - `pollers`: 4 pipelines each work through a backlog, unpolled, then
//!   (fresh pipelines, same input) while 50 clients poll pipeline
//!   status and `/metrics`, each every WEIR_BENCH_POLL_MS (default 100;
//!   0: as fast as they can). The clients run in the benchmark process, on
//!   the same cores as the server. Prints both throughputs, their ratio and
//!   the API latency percentiles; WEIR_BENCH_ROUNDS (default 3) alternating
//!   rounds, summed.
//! - `density`: N idle pipelines (default 1,000) in one server: its RSS,
//!   threads and CPU over a window with no data (default 60 s), then the
//!   delay from appending one record to one pipeline's input to its output
//!   being committed, over WEIR_BENCH_WAKES (default 1,000) appends, each
//!   to a pipeline chosen at random.
//!
//! Run: cargo bench -p weir --bench serve [-- pollers|density]
//! Sizes: WEIR_BENCH_RECORDS (per pollers pipeline, default 2,000,000),
//! WEIR_BENCH_PIPELINES (default 1000), WEIR_BENCH_SECONDS (default 60).

use weir_testkit as testkit;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use weir_engine::RecordBatch;
use weir_log::Topic;

struct Server {
    serve: testkit::Serve,
    http: ureq::Agent,
    data: PathBuf,
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

impl Server {
    fn start(data: &Path) -> (Server, String) {
        let serve = testkit::Serve::spawn(data, &[], None);
        let admin = serve.admin.clone();
        let http = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let s = Server {
            serve,
            http,
            data: data.to_path_buf(),
        };
        (s, admin)
    }

    fn call(&self, method: &str, path: &str, token: &str, body: Option<&[u8]>) -> (u16, Value) {
        let url = format!("{}{path}", self.serve.base);
        let auth = format!("Bearer {token}");
        let mut r = match (method, body) {
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
        }
        .unwrap();
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// A tenant with room for `pipelines`, and the uppercase component.
    fn tenant(&self, admin: &str, pipelines: u64) -> (String, String) {
        let body = json!({"name": "bench", "max-pipelines": pipelines, "max-memory": "64GiB",
                          "max-data-bytes": "500GiB"});
        let (st, v) = self.call(
            "POST",
            "/v1/tenants",
            admin,
            Some(body.to_string().as_bytes()),
        );
        assert_eq!(st, 201, "{v}");
        let token = v["token"].as_str().unwrap().to_string();
        let wasm = std::fs::read(testkit::guest("uppercase")).unwrap();
        let (st, c) = self.call("POST", "/v1/components", &token, Some(&wasm));
        assert!(st == 201 || st == 200, "{c}");
        (token, c["id"].as_str().unwrap().to_string())
    }

    fn log_root(&self) -> PathBuf {
        self.data.join("tenants/bench/log")
    }

    fn deploy(&self, token: &str, component: &str, name: &str, input: &str) {
        let spec = format!(
            "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"{input}\"\n[transform]\ncomponent = \"{component}\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"{name}-out\"\npartitions = 1\n"
        );
        let (st, v) = self.call(
            "PUT",
            &format!("/v1/pipelines/{name}"),
            token,
            Some(spec.as_bytes()),
        );
        assert_eq!(st, 201, "{name}: {v}");
    }

    /// What the server process is using.
    fn usage(&self) -> weir_testkit::ProcessUsage {
        weir_testkit::process_usage(self.serve.pid())
    }
}

fn committed(root: &Path, topic: &str) -> u64 {
    Topic::open(root, topic)
        .ok()
        .and_then(|t| t.committed_ends().ok())
        .map_or(0, |e| e.iter().sum())
}

fn fill(root: &Path, topic: &str, records: u64) {
    let mut t = Topic::create(root, topic, 2).unwrap();
    let chunk = 100_000u64;
    let mut done = 0;
    while done < records {
        let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
        for i in done..(done + chunk).min(records) {
            let v = format!("record {i:012} of the serve benchmark");
            parts[(i % 2) as usize].push(None, v.as_bytes(), 0, 0);
        }
        t.append(None, &parts, || {}).unwrap();
        done += chunk;
    }
}

/// Deploy 4 pipelines over `inputs`; seconds until all outputs are whole.
fn run_four(s: &Server, token: &str, id: &str, prefix: &str, records: u64) -> f64 {
    let started = Instant::now();
    for p in 0..4 {
        s.deploy(token, id, &format!("{prefix}{p}"), &format!("in{p}"));
    }
    let root = s.log_root();
    while (0..4).any(|p| committed(&root, &format!("{prefix}{p}-out")) < records) {
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed().as_secs_f64()
}

/// 50 clients polling status and `/metrics` every `every` while `work`
/// runs; its result and the API latencies.
fn polled<T>(
    s: &Server,
    token: &str,
    every: Duration,
    work: impl FnOnce() -> T,
) -> (T, Histogram<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..50)
        .map(|i| {
            let (base, token, stop) = (s.serve.base.clone(), token.to_string(), stop.clone());
            std::thread::spawn(move || {
                let http: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                let mut h = Histogram::<u64>::new(3).unwrap();
                let auth = format!("Bearer {token}");
                let mut n = i;
                while !stop.load(Ordering::Relaxed) {
                    let path = if n % 2 == 0 {
                        "/v1/pipelines"
                    } else {
                        "/metrics"
                    };
                    n += 1;
                    let t = Instant::now();
                    let mut r = http
                        .get(format!("{base}{path}"))
                        .header("Authorization", &auth)
                        .call()
                        .unwrap();
                    let _ = r.body_mut().read_to_string().unwrap();
                    assert_eq!(r.status().as_u16(), 200);
                    h.record(t.elapsed().as_micros() as u64).unwrap();
                    std::thread::sleep(every.saturating_sub(t.elapsed()));
                }
                h
            })
        })
        .collect();
    let out = work();
    stop.store(true, Ordering::Relaxed);
    let mut all = Histogram::<u64>::new(3).unwrap();
    for c in clients {
        all.add(c.join().unwrap()).unwrap();
    }
    (out, all)
}

fn remove_four(s: &Server, token: &str, prefix: &str) {
    for p in 0..4 {
        let url = format!("{}/v1/pipelines/{prefix}{p}?purge=true", s.serve.base);
        let r = s
            .http
            .delete(&url)
            .header("Authorization", &format!("Bearer {token}"))
            .call();
        assert_eq!(r.unwrap().status().as_u16(), 204);
    }
}

fn pollers() {
    let records = env_num("WEIR_BENCH_RECORDS", 2_000_000);
    let rounds = env_num("WEIR_BENCH_ROUNDS", 3);
    let every = Duration::from_millis(env_num("WEIR_BENCH_POLL_MS", 100));
    let dir = tempfile::tempdir().unwrap();
    let (s, admin) = Server::start(&dir.path().join("data"));
    let (token, id) = s.tenant(&admin, 100);
    let root = s.log_root();
    std::fs::create_dir_all(&root).unwrap();
    for p in 0..4 {
        fill(&root, &format!("in{p}"), records);
    }
    let rate = |secs: f64| 4.0 * records as f64 / secs;
    let (mut quiet_total, mut polled_total) = (0.0, 0.0);
    let mut all = Histogram::<u64>::new(3).unwrap();
    // Alternate, so drift on the machine hits both sides alike.
    for r in 0..rounds {
        let quiet = run_four(&s, &token, &id, &format!("q{r}-"), records);
        remove_four(&s, &token, &format!("q{r}-"));
        let (busy, h) = polled(&s, &token, every, || {
            run_four(&s, &token, &id, &format!("p{r}-"), records)
        });
        remove_four(&s, &token, &format!("p{r}-"));
        println!(
            "serve pollers: round {r}: 4 pipelines x {records} records; unpolled {quiet:.2} s ({:.0} rec/s), \
             polled {busy:.2} s ({:.0} rec/s): {:.0}%; {} API calls, p99 {:.2} ms",
            rate(quiet),
            rate(busy),
            100.0 * quiet / busy,
            h.len(),
            h.value_at_quantile(0.99) as f64 / 1000.0
        );
        quiet_total += quiet;
        polled_total += busy;
        all.add(h).unwrap();
    }
    println!(
        "serve pollers: {rounds} rounds: unpolled {:.0} rec/s, polled by 50 clients (each every {every:?}) {:.0} rec/s: {:.0}% of unpolled",
        rate(quiet_total / rounds as f64),
        rate(polled_total / rounds as f64),
        100.0 * quiet_total / polled_total
    );
    println!(
        "serve pollers: {} API calls ({:.0}/s), latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len(),
        all.len() as f64 / polled_total,
        all.value_at_quantile(0.5) as f64 / 1000.0,
        all.value_at_quantile(0.99) as f64 / 1000.0,
        all.max() as f64 / 1000.0
    );
}

fn density() {
    let n = env_num("WEIR_BENCH_PIPELINES", 1000);
    let window = Duration::from_secs(env_num("WEIR_BENCH_SECONDS", 60));
    let dir = tempfile::tempdir().unwrap();
    let (s, admin) = Server::start(&dir.path().join("data"));
    let (token, id) = s.tenant(&admin, n + 1);
    let root = s.log_root();
    std::fs::create_dir_all(&root).unwrap();
    let start = s.usage();
    let (rss0, threads0) = (start.rss_bytes, start.threads);
    let started = Instant::now();
    for p in 0..n {
        Topic::create(&root, &format!("in{p}"), 1).unwrap();
        s.deploy(&token, &id, &format!("p{p}"), &format!("in{p}"));
    }
    println!(
        "serve density: deployed {n} pipelines in {:.1} s (server before: {} MiB RSS, {threads0} threads)",
        started.elapsed().as_secs_f64(),
        rss0 >> 20
    );
    std::thread::sleep(Duration::from_secs(5));
    // Idle: no data arrives for the whole window.
    let cpu0 = s.usage().cpu_seconds;
    let t0 = Instant::now();
    let (mut peak_rss, mut peak_threads) = (0, 0);
    while t0.elapsed() < window {
        std::thread::sleep(Duration::from_secs(1));
        let now = s.usage();
        let (rss, threads) = (now.rss_bytes, now.threads);
        peak_rss = peak_rss.max(rss);
        peak_threads = peak_threads.max(threads);
    }
    let cpu1 = s.usage().cpu_seconds;
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "serve density: {n} idle pipelines over {secs:.0} s: peak RSS {} MiB, {peak_threads} threads, CPU {:.1}% of one core",
        peak_rss >> 20,
        100.0 * (cpu1 - cpu0) / secs,
    );
    // Then one record at a time to one pipeline, chosen at random (a
    // fixed-seed xorshift, so runs wake the same pipelines).
    let wakes = env_num("WEIR_BENCH_WAKES", 1000);
    let mut lat = Histogram::<u64>::new(3).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut woken = std::collections::HashSet::new();
    for _ in 0..wakes {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let p = seed % n;
        woken.insert(p);
        let out = format!("p{p}-out");
        let before = committed(&root, &out);
        let mut t = Topic::open(&root, &format!("in{p}")).unwrap();
        let mut b = RecordBatch::new(0);
        b.push(None, b"wake up", 0, 0);
        let sent = Instant::now();
        t.append(None, &[b], || {}).unwrap();
        while committed(&root, &out) <= before {
            std::thread::sleep(Duration::from_micros(200));
            assert!(
                sent.elapsed() < Duration::from_secs(30),
                "p{p} never answered"
            );
        }
        lat.record(sent.elapsed().as_micros() as u64).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = s.usage();
    println!(
        "serve density: append to visible output over {} appends to {} pipelines, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; then {} MiB RSS, {} threads",
        lat.len(),
        woken.len(),
        lat.value_at_quantile(0.5) as f64 / 1000.0,
        lat.value_at_quantile(0.99) as f64 / 1000.0,
        lat.max() as f64 / 1000.0,
        after.rss_bytes >> 20,
        after.threads
    );
    // Idle pipelines let their guest instances go after a minute without
    // a batch (and look again at the latest a minute after parking).
    std::thread::sleep(Duration::from_secs(130));
    let later = s.usage();
    println!(
        "serve density: 130 s after the last append: {} MiB RSS, {} threads",
        later.rss_bytes >> 20,
        later.threads
    );
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = which.is_empty();
    if all || which.iter().any(|w| w == "pollers") {
        pollers();
    }
    if all || which.iter().any(|w| w == "density") {
        density();
    }
}
