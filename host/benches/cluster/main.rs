//! `weir serve --cluster` (issue 38) as users run it: release `weir serve`
//! nodes with one cluster file each (slots 12, session timeout 6 s) on a
//! local single-node broker (the control plane) and one bucket of the moto
//! S3 server (components, checkpoints), driven through their HTTP API as in
//! tests/e2e/cluster/.
//!
//! - `scale`, for 1, 2 and 3 nodes, each a fresh cluster (its own topic
//!   prefix and bucket): one tenant, the uppercase guest, 12 pipelines
//!   Kafka -> uppercase -> exactly-once Kafka (micro-batch, 200 ms
//!   processing-time trigger, at most 20,000 offsets per trigger, no
//!   `checkpoint`: the cluster places it), each over its own 1-partition
//!   input holding 50,000 records of 100 bytes, PUT round-robin through the
//!   nodes. Throughput: from the first PUT until every output holds all
//!   its records, read_committed; and the pipelines each node ran
//!   (`GET /v1/cluster`). Then failover, in the same cluster: SIGKILL node 1
//!   (or, when it runs none of them, the node running one), one marker
//!   record into the input of a pipeline it ran, and the time from the
//!   kill until its uppercase form is committed in that pipeline's output.
//!   With one node, the node is started again at once (same data
//!   directory, name and cluster file): nothing else could run it.
//! - `idle`: a fresh 3-node cluster, WEIR_BENCH_IDLE (default 1,000) idle
//!   pipelines, all reading one empty shared topic into one shared output
//!   (each has its own checkpoint), PUT round-robin; once all run (or after
//!   10 minutes, when it says how many do), each node's pipelines, RSS,
//!   threads and CPU over 30 s with no data. Idle pipelines use the default
//!   trigger (WEIR_BENCH_IDLE_TRIGGER=200ms: the `scale` step's instead).
//!
//! Run: cargo bench -p weir --bench cluster [-- scale|idle]
//! (WEIR_KAFKA_BOOTSTRAP=host:port uses a running broker; otherwise
//! scripts/kafka-broker starts one. WEIR_BENCH_RECORDS: records per input,
//! default 50,000.)

// A bench's root file finds its modules beside it (benches/), hence the paths.
mod nodes;
mod topics;

use std::time::{Duration, Instant};

use nodes::{Cluster, not_running, per_node, running, show};

const PIPELINES: usize = 12;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// A pipeline file: Kafka `input` -> uppercase -> exactly-once Kafka
/// `output`; `trigger` the processing-time interval (none: the default).
fn spec(
    bootstrap: &str,
    component: &str,
    input: &str,
    output: &str,
    trigger: Option<&str>,
) -> String {
    let mut s = format!(
        r#"[[source]]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topics = ["{input}"]
starting-offsets = "earliest"
max-offsets-per-trigger = 20000
[transform]
component = "{component}"
[sink.default]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topic = "{output}"
transaction-timeout = "10s"
"#
    );
    if let Some(every) = trigger {
        s.push_str(&format!(
            "[trigger]\ntype = \"processing-time\"\ninterval = \"{every}\"\n"
        ));
    }
    s
}

struct Pipe {
    name: String,
    input: String,
    output: String,
}

/// One `scale` row.
struct Scaled {
    nodes: usize,
    /// The 12 PUTs, round-robin through the nodes.
    deploy: f64,
    secs: f64,
    rate: f64,
    per_node: Vec<(String, u64)>,
    /// The node killed and how it came back.
    killed: String,
    failover: Option<Duration>,
}

/// Throughput, then failover, on a fresh cluster of `n` nodes.
fn scale(bootstrap: &str, n: usize, records: usize) -> Scaled {
    let mut c = Cluster::start(bootstrap, n);
    let (token, component) = c.tenant(PIPELINES + 10);
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let pipes: Vec<Pipe> = (0..PIPELINES)
        .map(|i| Pipe {
            name: format!("p{i:02}"),
            input: format!("bench-in-{n}-{i:02}-{tag}"),
            output: format!("bench-out-{n}-{i:02}-{tag}"),
        })
        .collect();
    let inputs: Vec<String> = pipes.iter().map(|p| p.input.clone()).collect();
    let outputs: Vec<String> = pipes.iter().map(|p| p.output.clone()).collect();
    topics::create(bootstrap, &[inputs.clone(), outputs.clone()].concat());
    let t = Instant::now();
    topics::fill(bootstrap, &inputs, records);
    println!(
        "cluster scale: {n} node(s) up; {PIPELINES} inputs filled with {records} records each in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let mut counts = topics::Counts::new(bootstrap, &outputs);
    let started = Instant::now();
    for (i, p) in pipes.iter().enumerate() {
        let text = spec(bootstrap, &component, &p.input, &p.output, Some("200ms"));
        if let Err(e) = c.put(1 + i % n, &token, &p.name, &text) {
            panic!("{e}\n{}", c.logs());
        }
    }
    let deploy = started.elapsed().as_secs_f64();
    let mut said = Instant::now();
    while outputs.iter().any(|o| counts.get(o) < records) {
        counts.pump(Duration::from_millis(100));
        if said.elapsed() >= Duration::from_secs(10) {
            let done: usize = outputs.iter().map(|o| counts.get(o).min(records)).sum();
            println!(
                "cluster scale: {n} node(s): {done} of {} records out after {:.0} s",
                records * PIPELINES,
                started.elapsed().as_secs_f64()
            );
            said = Instant::now();
        }
        if started.elapsed() > Duration::from_secs(900) {
            let behind: Vec<String> = outputs
                .iter()
                .filter(|o| counts.get(o) < records)
                .map(|o| format!("{o}: {}", counts.get(o)))
                .collect();
            panic!(
                "outputs behind after 900 s: {behind:?}; not running: {}\n{}",
                not_running(&c.view()),
                c.logs()
            );
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let rate = (records * PIPELINES) as f64 / secs;
    let placed = per_node(&c.view());
    println!(
        "cluster scale: {n} node(s): {} records through {PIPELINES} pipelines in {secs:.2} s = {rate:.0} rec/s \
         (first PUT to last output committed); pipelines per node: {}",
        records * PIPELINES,
        show(&placed)
    );

    // Failover: a pipeline node 1 runs (or any running one, and its node).
    let view = c.view();
    let list = view["pipelines"].as_array().cloned().unwrap_or_default();
    let on = |p: &serde_json::Value, node: &str| {
        p["state"] == "running"
            && p["nodes"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == node))
    };
    let chosen = list
        .iter()
        .find(|&p| on(p, "node-1"))
        .or_else(|| list.iter().find(|p| p["state"] == "running"))
        .unwrap_or_else(|| panic!("nothing running: {view}"));
    let node = if on(chosen, "node-1") {
        "node-1".to_string()
    } else {
        chosen["nodes"][0].as_str().unwrap().to_string()
    };
    let k: usize = node
        .strip_prefix("node-")
        .and_then(|k| k.parse().ok())
        .unwrap();
    let name = chosen["name"].as_str().unwrap();
    let p = pipes.iter().find(|p| p.name == name).unwrap();
    let tail = topics::Tail::new(bootstrap, &p.output);
    let producer = topics::producer(bootstrap);
    let marker = format!(r#"{{"marker":"{}"}}"#, uuid::Uuid::new_v4().simple());
    let want = marker.to_ascii_uppercase();
    c.kill(k);
    let killed = Instant::now();
    topics::send(&producer, &p.input, marker.as_bytes());
    topics::flush(&producer);
    let how = if n == 1 {
        c.restart(k);
        "SIGKILL, started again at once"
    } else {
        "SIGKILL"
    };
    let failover = tail.until(&want, killed, Duration::from_secs(120));
    match failover {
        Some(d) => println!(
            "cluster failover: {n} node(s): {node} ({how}) ran {name}: a record produced after the kill \
             committed in its output {} ms after the kill",
            d.as_millis()
        ),
        None => println!(
            "cluster failover: {n} node(s): {node} ({how}) ran {name}: its marker not committed within 120 s \
             (not running: {})\n{}",
            not_running(&c.view()),
            c.logs()
        ),
    }
    Scaled {
        nodes: n,
        deploy,
        secs,
        rate,
        per_node: placed,
        killed: format!("{node} ({how})"),
        failover,
    }
}

/// One `idle` node: pipelines, peak RSS (bytes), peak threads, CPU %.
type Idle = (String, u64, u64, u64, f64);

/// `n` idle pipelines over a fresh 3-node cluster: how many ran, and each
/// node's figures over 30 idle seconds.
fn idle(bootstrap: &str, n: usize) -> (usize, Vec<Idle>) {
    let c = Cluster::start(bootstrap, 3);
    let (token, component) = c.tenant(n + 10);
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let (input, output) = (
        format!("bench-idle-in-{tag}"),
        format!("bench-idle-out-{tag}"),
    );
    topics::create(bootstrap, &[input.clone(), output.clone()]);
    let trigger = std::env::var("WEIR_BENCH_IDLE_TRIGGER").ok();
    let text = spec(bootstrap, &component, &input, &output, trigger.as_deref());
    let started = Instant::now();
    let mut refused = Vec::new();
    for i in 0..n {
        if let Err(e) = c.put(1 + i % 3, &token, &format!("idle{i:05}"), &text) {
            refused.push(e);
        }
    }
    println!(
        "cluster idle: {} of {n} pipelines deployed in {:.1} s{}",
        n - refused.len(),
        started.elapsed().as_secs_f64(),
        refused
            .first()
            .map(|e| format!(" (refused: {e})"))
            .unwrap_or_default()
    );
    let mut said = Instant::now();
    let ran = loop {
        let view = c.view();
        let ran = running(&view);
        if ran >= n || started.elapsed() > Duration::from_secs(600) {
            println!(
                "cluster idle: {ran} of {n} running {:.0} s after the first PUT; per node: {}",
                started.elapsed().as_secs_f64(),
                show(&per_node(&view))
            );
            break ran;
        }
        if said.elapsed() >= Duration::from_secs(10) {
            println!(
                "cluster idle: {ran} of {n} running after {:.0} s; per node: {}",
                started.elapsed().as_secs_f64(),
                show(&per_node(&view))
            );
            said = Instant::now();
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    let placed = per_node(&c.view());
    // 30 s with no data and no API calls: CPU over the window, RSS and
    // threads sampled each second (their peaks).
    let before: Vec<f64> = (1..=3).map(|k| c.usage(k).cpu_seconds).collect();
    let mut peaks = [(0u64, 0u64); 3];
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_secs(1));
        for (k, peak) in peaks.iter_mut().enumerate() {
            let now = c.usage(k + 1);
            let (rss, threads) = (now.rss_bytes, now.threads);
            *peak = (peak.0.max(rss), peak.1.max(threads));
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let figures: Vec<Idle> = (1..=3)
        .map(|k| {
            let name = format!("node-{k}");
            let pipelines = placed.iter().find(|(n, _)| *n == name).map_or(0, |p| p.1);
            let cpu = 100.0 * (c.usage(k).cpu_seconds - before[k - 1]) / secs;
            let (rss, threads) = peaks[k - 1];
            println!(
                "cluster idle: {name}: {pipelines} pipelines, peak RSS {} MiB, {threads} threads, \
                 CPU {cpu:.1}% of one core over {secs:.0} s idle",
                rss >> 20
            );
            (name, pipelines, rss, threads, cpu)
        })
        .collect();
    (ran, figures)
}

fn main() {
    let which: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let all = which.is_empty();
    let records = env_num("WEIR_BENCH_RECORDS", 50_000) as usize;
    let idle_n = env_num("WEIR_BENCH_IDLE", 1000) as usize;
    let dir = tempfile::tempdir().unwrap();
    let broker = topics::Broker::start(dir.path());
    let bootstrap = broker.bootstrap.clone();

    let mut rows = Vec::new();
    if all || which.iter().any(|w| w == "scale") {
        for n in [1, 2, 3] {
            rows.push(scale(&bootstrap, n, records));
        }
    }
    let idled = (all || which.iter().any(|w| w == "idle")).then(|| idle(&bootstrap, idle_n));

    if !rows.is_empty() {
        println!(
            "\n{PIPELINES} pipelines x {records} records (100 bytes) Kafka -> uppercase -> exactly-once Kafka:\n"
        );
        println!(
            "| nodes | pipelines per node | the 12 PUTs | first PUT to all committed | throughput | node killed | kill to new output committed |"
        );
        println!("|---|---|---|---|---|---|---|");
        let one = rows[0].rate;
        for r in &rows {
            let failover = r.failover.map_or("not within 120 s".to_string(), |d| {
                format!("{} ms", d.as_millis())
            });
            println!(
                "| {} | {} | {:.2} s | {:.2} s | {:.0} rec/s ({:.2}x one node) | {} | {failover} |",
                r.nodes,
                show(&r.per_node),
                r.deploy,
                r.secs,
                r.rate,
                r.rate / one,
                r.killed
            );
        }
    }
    if let Some((ran, figures)) = idled {
        println!(
            "\n{idle_n} idle pipelines on 3 nodes ({ran} of them running), 30 s with no data:\n"
        );
        println!("| node | pipelines | RSS (peak) | threads (peak) | CPU over 30 s idle |");
        println!("|---|---|---|---|---|");
        for (name, pipelines, rss, threads, cpu) in figures {
            println!(
                "| {name} | {pipelines} | {} MiB | {threads} | {cpu:.1}% of one core |",
                rss >> 20
            );
        }
    }
}
