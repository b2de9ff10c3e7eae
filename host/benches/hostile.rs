//! A tenant beside a hostile one in one `weir serve` (issue 34), driven
//! through the HTTP API as users drive it (the release `weir` binary).
//!
//! Alice: one pipeline, `uppercase` over a 1-partition embedded-log topic
//! of WEIR_BENCH_RECORDS (default 20,000,000: runs longer than the looping
//! guest's 3 s stop-start cycle) records, timed from PUT to
//! its whole output committed, while a client reads her pipeline's status
//! every 20 ms (API latency). Alone, then beside mallory running every
//! hostile thing of the attack suite at once:
//! - a guest that loops in every call (call timeout 60 s, the ceiling),
//!   stopped and started again every 3 s (each stop interrupts it);
//! - a pipeline forging metric names on every record;
//! - her accomplice trudy's pipeline filling its data quota (halted by
//!   the watcher);
//! - 200 half-open connections from another client address, renewed as the
//!   server drops them;
//! - a client PUTting hostile pipeline files (escaping topics, four billion
//!   partitions, a 100000-day timeout) as fast as it is answered
//!   (held to her `max-requests-per-second`, 100).
//!
//! Prints both rates, their ratio (target >= 90%) and alice's API p50/p99
//! (target p99 < 50 ms). WEIR_BENCH_ATTACKS picks some of them
//! (`spin,forge,quota,connections,files`; default all).
//! WEIR_BENCH_ROUNDS (default 3) alternating rounds.
//!
//! Run: cargo bench -p weir --bench hostile

use weir_testkit as testkit;

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use weir_engine::RecordBatch;
use weir_log::Topic;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

struct Api {
    base: String,
    http: ureq::Agent,
}

impl Api {
    fn new(base: &str) -> Api {
        Api {
            base: base.to_string(),
            http: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
        }
    }

    fn call(&self, method: &str, path: &str, token: &str, body: Option<&[u8]>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let auth = format!("Bearer {token}");
        let r = match (method, body) {
            ("GET", _) => self.http.get(&url).header("Authorization", &auth).call(),
            ("DELETE", _) => self.http.delete(&url).header("Authorization", &auth).call(),
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
            Err(e) => (0, json!(e.to_string())),
        }
    }

    fn tenant(&self, admin: &str, name: &str, extra: Value, guest: &str) -> (String, String) {
        let mut body = json!({"name": name, "max-pipelines": 20});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (st, v) = self.call(
            "POST",
            "/v1/tenants",
            admin,
            Some(body.to_string().as_bytes()),
        );
        assert_eq!(st, 201, "{v}");
        let token = v["token"].as_str().unwrap().to_string();
        let wasm = std::fs::read(testkit::guest(guest)).unwrap();
        let (st, c) = self.call("POST", "/v1/components", &token, Some(&wasm));
        assert!(st == 201 || st == 200, "{c}");
        (token, c["id"].as_str().unwrap().to_string())
    }

    fn put(&self, token: &str, name: &str, spec: &str) -> (u16, Value) {
        self.call(
            "PUT",
            &format!("/v1/pipelines/{name}"),
            token,
            Some(spec.as_bytes()),
        )
    }
}

fn spec(id: &str, input: &str, output: &str, limits: &str) -> String {
    format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"{input}\"\n[transform]\ncomponent = \"{id}\"\n[transform.limits]\n{limits}\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"{output}\"\npartitions = 1\n"
    )
}

fn fill(root: &Path, topic: &str, records: u64, value: impl Fn(u64) -> Vec<u8>) {
    let mut t = Topic::open(root, topic)
        .or_else(|_| Topic::create(root, topic, 1))
        .unwrap();
    let chunk = 100_000u64;
    let mut done = 0;
    while done < records {
        let mut b = RecordBatch::new(0);
        for i in done..(done + chunk).min(records) {
            b.push(None, &value(i), 0, 0);
        }
        t.append(None, &[b], || {}).unwrap();
        done += chunk;
    }
}

fn committed(root: &Path, topic: &str) -> u64 {
    Topic::open(root, topic)
        .ok()
        .and_then(|t| t.committed_ends().ok())
        .map_or(0, |e| e.iter().sum())
}

/// Alice's run: seconds from PUT to her whole output, and her API
/// latencies meanwhile (status every 20 ms).
fn alice_run(
    api: &Api,
    token: &str,
    id: &str,
    root: &Path,
    name: &str,
    records: u64,
) -> (f64, Histogram<u64>) {
    let mut h = Histogram::<u64>::new(3).unwrap();
    let started = Instant::now();
    let (st, v) = api.put(token, name, &spec(id, "in", &format!("{name}-out"), ""));
    assert_eq!(st, 201, "{v}");
    let mut next = Instant::now();
    while committed(root, &format!("{name}-out")) < records {
        if Instant::now() >= next {
            let t = Instant::now();
            let (st, _) = api.call("GET", &format!("/v1/pipelines/{name}"), token, None);
            assert_eq!(st, 200);
            h.record(t.elapsed().as_micros() as u64).unwrap();
            next = t + Duration::from_millis(20);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let secs = started.elapsed().as_secs_f64();
    let (st, _) = api.call(
        "DELETE",
        &format!("/v1/pipelines/{name}?purge=true"),
        token,
        None,
    );
    assert_eq!(st, 204);
    (secs, h)
}

/// Mallory: her tenant, component and inputs, made once.
struct Mallory {
    token: String,
    id: String,
    /// Her accomplice, whose pipeline goes over its data quota.
    trudy: String,
    trudy_id: String,
    trudy_log: std::path::PathBuf,
}

impl Mallory {
    fn new(api: &Api, admin: &str, data: &Path) -> Mallory {
        let (token, id) = api.tenant(admin, "mallory", json!({}), "misbehave");
        let root = data.join("tenants/mallory/log");
        std::fs::create_dir_all(&root).unwrap();
        fill(&root, "loop", 1, |_| b"loop".to_vec());
        fill(&root, "forge", 1000, |i| {
            format!("metric:x{i}\",tenant=\"alice\"}} 1\n").into_bytes()
        });
        let (trudy, trudy_id) = api.tenant(
            admin,
            "trudy",
            json!({"max-data-bytes": "1MiB"}),
            "uppercase",
        );
        let trudy_log = data.join("tenants/trudy/log");
        std::fs::create_dir_all(&trudy_log).unwrap();
        fill(&trudy_log, "big", 1, |_| b"x".to_vec());
        Mallory {
            token,
            id,
            trudy,
            trudy_id,
            trudy_log,
        }
    }

    /// Everything hostile at once, until `stop`; her pipelines are deleted
    /// when the threads end.
    fn attack(&self, base: &str, stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
        let api = Api::new(base);
        let mut threads = Vec::new();
        let on = |what: &str| {
            std::env::var("WEIR_BENCH_ATTACKS").map_or(true, |a| a.split(',').any(|x| x == what))
        };
        // The looping guest, stopped and started every 3 s.
        if on("spin") {
            let (base, token, id, stop) = (
                base.to_string(),
                self.token.clone(),
                self.id.clone(),
                stop.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let api = Api::new(&base);
                let (st, v) = api.put(
                    &token,
                    "spin",
                    &spec(&id, "loop", "loop-out", "call-timeout = \"60s\""),
                );
                assert_eq!(st, 201, "{v}");
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_secs(3));
                    api.call("POST", "/v1/pipelines/spin/stop", &token, None);
                    api.call("POST", "/v1/pipelines/spin/start", &token, None);
                }
                for p in ["spin", "forge"] {
                    api.call(
                        "DELETE",
                        &format!("/v1/pipelines/{p}?purge=true"),
                        &token,
                        None,
                    );
                }
            }));
        }
        if on("forge") {
            let (st, v) = api.put(
                &self.token,
                "forge",
                &spec(&self.id, "forge", "forge-out", ""),
            );
            assert!(st == 201 || st == 200, "{v}");
        }
        // Over the data quota: the watcher halts it (once over, the PUT of
        // a later round is refused).
        if on("quota") {
            let _ = api.put(
                &self.trudy,
                "big",
                &spec(&self.trudy_id, "big", "big-out", ""),
            );
            fill(&self.trudy_log, "big", 2000, |_| vec![b'x'; 1024]);
        }
        // Half-open connections from another address, renewed.
        if on("connections") {
            let (addr, stop) = (base.trim_start_matches("http://").to_string(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let addr: std::net::SocketAddr = addr.parse().unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        let mut held = Vec::new();
                        for _ in 0..200 {
                            let sock = tokio::net::TcpSocket::new_v4().unwrap();
                            sock.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                            if let Ok(mut c) = sock.connect(addr).await {
                                use tokio::io::AsyncWriteExt;
                                let _ =
                                    c.write_all(b"GET /v1/whoami HTTP/1.1\r\nHost: x\r\n").await;
                                held.push(c);
                            }
                        }
                        tokio::time::sleep(Duration::from_secs(2)).await;
                    }
                });
            }));
        }
        // Hostile files, as fast as they are answered.
        if on("files") {
            let (base, token, id) = (base.to_string(), self.token.clone(), self.id.clone());
            threads.push(std::thread::spawn(move || {
                let api = Api::new(&base);
                let files = [
                    spec(&id, "../../alice/log/in", "x", ""),
                    spec(&id, "in", "/etc/x", ""),
                    spec(&id, "in", "x", "call-timeout = \"100000d\""),
                    "[[source]]\ntype = \"rate\"\npartitions = 4294967295\nrows-per-second = 1\n[sink.default]\ntype = \"console\"\n".to_string(),
                ];
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let (st, _) = api.put(&token, "evil", &files[n % files.len()]);
                    assert!(st == 400 || st == 403, "a hostile file got {st}");
                    n += 1;
                }
            }));
        }
        threads
    }
}

fn main() {
    let records = env_num("WEIR_BENCH_RECORDS", 20_000_000);
    let rounds = env_num("WEIR_BENCH_ROUNDS", 3);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let serve = testkit::Serve::spawn(&data, &["--quota-interval", "1s"], None);
    let api = Api::new(&serve.base);
    let (alice, id) = api.tenant(
        &serve.admin,
        "alice",
        json!({"max-data-bytes": "100GiB"}),
        "uppercase",
    );
    let root = data.join("tenants/alice/log");
    std::fs::create_dir_all(&root).unwrap();
    fill(&root, "in", records, |i| {
        format!("record {i:012} of the hostile benchmark").into_bytes()
    });
    let (mut alone_total, mut beside_total) = (0.0, 0.0);
    let (mut alone_h, mut beside_h) = (
        Histogram::<u64>::new(3).unwrap(),
        Histogram::<u64>::new(3).unwrap(),
    );
    let mallory = Mallory::new(&api, &serve.admin, &data);
    for r in 0..rounds {
        let (alone, h) = alice_run(&api, &alice, &id, &root, &format!("alone{r}"), records);
        alone_h.add(h).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let threads = mallory.attack(&serve.base, stop.clone());
        // Let the looping guest and the connection flood get going.
        std::thread::sleep(Duration::from_secs(2));
        let (beside, h) = alice_run(&api, &alice, &id, &root, &format!("beside{r}"), records);
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        println!(
            "hostile: round {r}: alone {alone:.2} s ({:.0} rec/s), beside mallory {beside:.2} s ({:.0} rec/s): {:.0}%; alice's API p99 {:.2} ms",
            records as f64 / alone,
            records as f64 / beside,
            100.0 * alone / beside,
            h.value_at_quantile(0.99) as f64 / 1000.0
        );
        let _ = std::io::stdout().flush();
        beside_h.add(h).unwrap();
        alone_total += alone;
        beside_total += beside;
    }
    let n = rounds as f64;
    println!(
        "hostile: {rounds} rounds of {records} records: alone {:.0} rec/s, beside mallory {:.0} rec/s: {:.0}% (target >= 90%)",
        records as f64 * n / alone_total,
        records as f64 * n / beside_total,
        100.0 * alone_total / beside_total
    );
    for (what, h) in [("alone", &alone_h), ("beside mallory", &beside_h)] {
        println!(
            "hostile: alice's API {what}: {} calls, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 < 50 ms)",
            h.len(),
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
            h.max() as f64 / 1000.0
        );
    }
}
