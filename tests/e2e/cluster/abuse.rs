//! The edge's attacks against cluster nodes: a tenant flooding the API
//! through every node at once is held to its rate in all (each node admits
//! its share), and a rate the admin changes through one node applies on the
//! others; half-open connections and oversized bodies are bounded on a
//! node as on one server; a log followed on one node ends when its token is
//! rotated through another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Tenants;
use super::nodes::{Cluster, wait_until};
use crate::serve::Server;
use crate::serve::attacks::edge::{
    HalfOpen, open_fds, p99_of_gets, refusals_are_json_and_bodies_bounded,
};
use crate::serve::attacks::tenant_with;

const RATE: u64 = 30;
const FLOOD: Duration = Duration::from_secs(4);

/// Mallory (a new tenant at [`RATE`] requests a second) floods every live
/// node with refused pipeline files; acme, meanwhile, is not throttled.
pub(super) fn a_flood_is_held_to_the_rate_across_nodes(c: &Cluster, t: &Tenants) {
    let mallory = tenant_with(
        c.server(1),
        "mallory",
        json!({"max-requests-per-second": RATE}),
    );
    let live: Vec<&Server> = c.live().iter().map(|n| &n.server).collect();
    for (k, s) in live.iter().enumerate() {
        wait_until(
            Instant::now() + Duration::from_secs(30),
            &format!("live node {k} knowing mallory"),
            || match s.call("GET", "/v1/whoami", Some(&mallory), None) {
                (200, _) => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
    }
    let hostile = "[[source]]\ntype = \"rate\"\npartitions = 4294967295\nrows-per-second = 1\n[sink.default]\ntype = \"console\"\n";
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let acme = &t.tokens["acme"];
    let victim = c.server(1);
    let (answered, throttled, slowest) = std::thread::scope(|scope| {
        // Two flooding threads per node.
        let flood: Vec<_> = live
            .iter()
            .flat_map(|s| [*s, *s])
            .map(|s| {
                let (token, stop) = (&mallory, &stop);
                scope.spawn(move || {
                    let (mut answered, mut throttled) = (0usize, 0usize);
                    while !stop.load(Ordering::Relaxed) {
                        let (st, v) = crate::serve::pipelines::put(s, token, "evil", hostile);
                        match st {
                            400 => answered += 1,
                            429 => {
                                assert_eq!(v["error"], "too-many-requests", "{v}");
                                throttled += 1;
                            }
                            other => panic!("a hostile file got {other}: {v}"),
                        }
                    }
                    (answered, throttled)
                })
            })
            .collect();
        // Acme's calls, paced well under its own share of its rate.
        let mut slowest = Duration::ZERO;
        while started.elapsed() < FLOOD {
            slowest = slowest.max(p99_of_gets(victim, acme, "/v1/pipelines", 1));
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
        let (mut answered, mut throttled) = (0, 0);
        for h in flood {
            let (a, r) = h.join().unwrap();
            answered += a;
            throttled += r;
        }
        (answered, throttled, slowest)
    });
    let secs = started.elapsed().as_secs_f64();
    let nodes = live.len() as f64;
    // Each node admits ceil(RATE / nodes) a second, and a second's burst.
    let share = (RATE as f64 / nodes).ceil();
    eprintln!(
        "cluster: flood through {nodes} nodes: {answered} answered, {throttled} refused in {secs:.1} s (rate {RATE}/s, {share}/s a node); acme's slowest call on node-1 {slowest:?}"
    );
    assert!(
        answered as f64 <= share * nodes * (secs + 1.0) + 2.0 * nodes,
        "{answered} answered in {secs:.1} s: more than the rate across the nodes"
    );
    assert!(answered >= 2 * RATE as usize, "the rate is not a wall");
    // Mallory was held (her requests waited their turn, or were refused:
    // counted where users look); acme never was.
    let metrics = victim.metrics(&c.admin);
    assert!(
        metrics.contains(r#"weir_api_throttled_requests_total{tenant="mallory""#),
        "{metrics}"
    );
    assert!(
        !metrics.contains(r#"weir_api_throttled_requests_total{tenant="acme""#),
        "acme throttled by mallory's flood"
    );

    // The admin lowers mallory's rate through node 1; node 3 holds her to
    // it as soon as it has read the change.
    let (st, v) = c
        .server(1)
        .patch_tenant("mallory", json!({"max-requests-per-second": 1}));
    assert_eq!(st, 200, "{v}");
    let s3 = c.server(3);
    wait_until(
        Instant::now() + Duration::from_secs(30),
        "node-3 knowing mallory's new rate",
        || match s3.call("GET", "/v1/tenants", Some(&c.admin), None) {
            (200, v)
                if v.as_array().is_some_and(|all| {
                    all.iter()
                        .any(|t| t["name"] == "mallory" && t["max-requests-per-second"] == 1)
                }) =>
            {
                Ok(())
            }
            (st, v) => Err(format!("{st} {v}")),
        },
        &|| c.logs(),
    );
    let got: Vec<u16> = std::thread::scope(|scope| {
        let burst: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| s3.call("GET", "/v1/whoami", Some(&mallory), None).0))
            .collect();
        burst.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(got.contains(&429), "node-3 kept the old rate: {got:?}");
}

/// Half-open connections and oversized bodies against node `k`.
pub(super) fn the_edge_holds_on(c: &Cluster, k: usize, t: &Tenants) {
    let s = c.server(k);
    let acme = &t.tokens["acme"];
    let fds_before = open_fds(s.pid());
    let attackers = HalfOpen::open(s, 300);
    let p99 = p99_of_gets(s, acme, "/v1/pipelines", 50);
    let fds = open_fds(s.pid());
    eprintln!(
        "cluster: 300 half-open connections to node-{k}: acme's p99 {p99:?}, descriptors {fds_before} -> {fds}"
    );
    // At most the default per-client cap (256) of them is held.
    assert!(
        fds <= fds_before + 256 + 32,
        "{fds} descriptors open, {fds_before} before"
    );
    drop(attackers);
    refusals_are_json_and_bodies_bounded(s, acme);
}

/// Lines from `rx` until one holds `needle` (within 30 s), or fail.
fn until_line(rx: &mpsc::Receiver<String>, needle: &str, what: &str) {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(needle) => return,
            Ok(l) if l == "ended" => panic!("{what}: the stream ended first: {seen:?}"),
            Ok(l) => seen.push(l),
            Err(_) => panic!("{what}: no line with `{needle}`: {seen:?}"),
        }
    }
}

/// A guest's log lines and progress are held by the node running it; any
/// node answers for them (asking that node). A log followed through a
/// node that does not run the pipeline brings new lines, and ends when
/// acme's token is rotated through yet another node. Returns acme's new
/// token.
pub(super) fn logs_reach_their_tenant_through_any_node(
    c: &Cluster,
    t: &Tenants,
    bootstrap: &str,
) -> String {
    let acme = &t.tokens["acme"];
    let live: Vec<(&str, &Server)> = c
        .live()
        .into_iter()
        .map(|n| (n.name.as_str(), &n.server))
        .collect();
    let id = live[0].1.upload(acme, "misbehave");
    let (input, output) = (
        crate::kafka::unique("talk-in"),
        crate::kafka::unique("talk-out"),
    );
    crate::kafka::create_topic(bootstrap, &input, 1, &[]);
    crate::kafka::create_topic(bootstrap, &output, 1, &[]);
    let spec = format!(
        "[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopics = [\"{input}\"]\nstarting-offsets = \"earliest\"\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopic = \"{output}\"\n[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\"\n"
    );
    let (st, v) = crate::serve::pipelines::put(live[0].1, acme, "talker", &spec);
    assert_eq!(st, 201, "{v}");
    let runner = wait_until(
        Instant::now() + Duration::from_secs(60),
        "talker running",
        || match live[0]
            .1
            .call("GET", "/v1/pipelines/talker", Some(acme), None)
        {
            (200, v) if v["state"] == "running" => {
                Ok(v["node"].as_str().unwrap_or_default().to_string())
            }
            (st, v) => Err(format!("{st} {v}")),
        },
        &|| c.logs(),
    );
    let log = |n: usize| {
        let value = "log".to_string();
        let recs: Vec<crate::kafka::Rec<'_>> = (0..n)
            .map(|_| crate::kafka::Rec {
                partition: None,
                key: None,
                value: value.clone(),
                timestamp: None,
            })
            .collect();
        crate::kafka::produce(bootstrap, &input, &recs);
    };
    log(1);
    // Every node shows the guest's line and a progress report.
    for (node, s) in &live {
        wait_until(
            Instant::now() + Duration::from_secs(30),
            &format!("{node} showing talker's log line (it runs on {runner})"),
            || match s.call("GET", "/v1/pipelines/talker/logs?tail=50", Some(acme), None) {
                (200, v) if v.to_string().contains("log record seen") => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
        // The batch's report follows its guest's line (at its commit).
        wait_until(
            Instant::now() + Duration::from_secs(30),
            &format!("{node} showing talker's progress (it runs on {runner})"),
            || match s.call("GET", "/v1/pipelines/talker/progress", Some(acme), None) {
                (200, v) if v.as_array().is_some_and(|a| !a.is_empty()) => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
    }
    // Followed through a node that does not run it, rotated through another.
    let (via, s) = *live
        .iter()
        .find(|(n, _)| *n != runner)
        .expect("a node not running talker");
    let rx = s.follow_logs(acme, "talker", "&tail=0");
    until_line(&rx, "open 200", "the followed log");
    log(1);
    until_line(
        &rx,
        "log record seen",
        &format!("a line followed through {via}"),
    );
    let (_, other) = *live.iter().find(|(n, _)| *n != via).expect("another node");
    let (st, v) = other.call("POST", "/v1/tenants/acme/token", Some(&c.admin), None);
    assert_eq!(st, 200, "{v}");
    let rotated = Instant::now();
    until_line(
        &rx,
        "rotated or revoked",
        &format!("the log followed through {via}"),
    );
    eprintln!(
        "cluster: talker runs on {runner}; its log followed through {via} ended {} ms after acme's token was rotated elsewhere",
        rotated.elapsed().as_millis()
    );
    v["token"].as_str().unwrap().to_string()
}
