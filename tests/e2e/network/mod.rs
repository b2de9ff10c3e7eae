//! Network faults between weir and the Kafka broker, made by a real fault
//! proxy (Toxiproxy) the test starts: latency, a bandwidth limit,
//! connection resets, a blackholed link and a cut one, each for a while
//! and then healed, while a Kafka -> WASM -> Kafka pipeline runs exactly
//! once in micro-batch and continuous mode. After each fault the time the
//! pipeline took to catch up once the link was back is printed; at the end
//! a read_committed consumer finds every input record once.

mod group;
mod object_store;
mod toxiproxy;

use std::time::{Duration, Instant};

use serde_json::json;

use crate::kafka::exactly_once::Pipeline;
use crate::kafka::outages::{Running, wait_for};
use crate::kafka::{produce_numbers, start_broker_proxied};
use toxiproxy::{Toxiproxy, free_port};

/// One fault: a toxic (or, for `None`, the link cut) held for `hold`.
struct Fault {
    name: &'static str,
    toxic: Option<(&'static str, serde_json::Value)>,
    hold: Duration,
}

fn faults() -> Vec<Fault> {
    let s = Duration::from_secs;
    vec![
        Fault {
            name: "latency 250 ms +- 50",
            toxic: Some(("latency", json!({"latency": 250, "jitter": 50}))),
            hold: s(3),
        },
        Fault {
            name: "bandwidth 32 KB/s",
            toxic: Some(("bandwidth", json!({"rate": 32}))),
            hold: s(3),
        },
        Fault {
            name: "connections reset after 200 ms",
            toxic: Some(("reset_peer", json!({"timeout": 200}))),
            hold: s(3),
        },
        Fault {
            name: "blackhole (data held, never delivered)",
            toxic: Some(("timeout", json!({"timeout": 0}))),
            hold: s(6),
        },
        Fault {
            name: "link cut (connections closed and refused)",
            toxic: None,
            hold: s(6),
        },
    ]
}

/// A private broker with Toxiproxy in front of its second listener: the
/// proxy `kafka` listens on `through`; `bootstrap` is the direct address
/// (for the test's own clients).
pub(crate) struct ProxiedBroker {
    pub proxy: Toxiproxy,
    pub dir: tempfile::TempDir,
    pub bootstrap: String,
    pub through: String,
}

impl ProxiedBroker {
    pub(crate) fn start() -> ProxiedBroker {
        let proxy = Toxiproxy::start();
        let proxied = free_port();
        let dir = tempfile::tempdir().unwrap();
        let bootstrap = start_broker_proxied(dir.path(), proxied);
        let port: u16 = bootstrap.rsplit(':').next().unwrap().parse().unwrap();
        let through = format!("127.0.0.1:{proxied}");
        proxy.proxy("kafka", &through, &format!("127.0.0.1:{}", port + 2));
        ProxiedBroker {
            proxy,
            dir,
            bootstrap,
            through,
        }
    }
}

fn kafka_faults_keep_exactly_once(continuous: bool) {
    let ProxiedBroker {
        proxy,
        dir,
        bootstrap,
        through,
    } = ProxiedBroker::start();

    let mut p = Pipeline::on(&bootstrap, 200, 100, continuous, "");
    p.connect_through(&through);
    if !continuous {
        p.set_trigger("[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\"");
    }
    p.continuous_forever();
    let log = dir.path().join("weir.log");
    let mut running = Running::start(&p, &log);
    wait_for(&p, 200, &mut running.0, &log);
    let mode = if continuous {
        "continuous"
    } else {
        "micro-batch"
    };
    for fault in faults() {
        match &fault.toxic {
            Some((kind, attributes)) => proxy.toxic("kafka", kind, attributes.clone()),
            None => proxy.set_enabled("kafka", false),
        }
        produce_numbers(&bootstrap, &p.input, p.n, 100);
        p.n += 100;
        // The fault's window: the pipeline runs (or tries to) through it.
        std::thread::sleep(fault.hold);
        match &fault.toxic {
            Some((kind, _)) => proxy.heal("kafka", kind),
            None => proxy.set_enabled("kafka", true),
        }
        let healed = Instant::now();
        wait_for(&p, p.n, &mut running.0, &log);
        eprintln!(
            "{mode}, {}: caught up {} ms after the link was healed",
            fault.name,
            healed.elapsed().as_millis()
        );
        p.check(&format!("{mode}, after {}", fault.name));
    }
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(running.0.id() as i32, libc::SIGTERM) };
    assert!(running.0.wait().unwrap().success());
    p.check(&format!("{mode}, at the end"));
}

#[test]
fn micro_batch_kafka_is_exactly_once_through_network_faults() {
    kafka_faults_keep_exactly_once(false);
}

#[test]
fn continuous_kafka_is_exactly_once_through_network_faults() {
    kafka_faults_keep_exactly_once(true);
}
