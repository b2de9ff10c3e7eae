//! Group mode with Toxiproxy between one member and the broker: latency, a
//! bandwidth limit, connection resets and a blackhole on that member's link,
//! each held and healed with the output exact after it; then the member cut
//! off while the other goes on: the group hands the cut-off
//! member's partitions to the live one after the session timeout, the cut
//! member's work in flight is fenced (the output holds every record once),
//! and when the link returns it rejoins and takes a share again. The times
//! to take over and to rejoin are printed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::ProxiedBroker;
use crate::kafka::group::{Group, Tail, assert_uppercased_once, produce, values};
use crate::kafka::{create_topic, unique};

fn a_member_cut_off_is_fenced_and_the_group_goes_on(continuous: bool) {
    let ProxiedBroker {
        proxy,
        dir: _dir,
        bootstrap,
        through,
    } = ProxiedBroker::start();
    let (input, output) = (unique("in"), unique("out"));
    create_topic(&bootstrap, &input, 12, &[]);
    create_topic(&bootstrap, &output, 4, &[]);

    let mut g = Group::on(&bootstrap, &input, &output, "uppercase", "", continuous);
    g.start(); // member 0: straight to the broker
    g.start_through(&through); // member 1: through the proxy
    let mut tail = Tail::new(&bootstrap, &output, 4);
    produce(&bootstrap, &input, &values(0, 20_000));
    g.wait_until_held_by(&[0, 1]);
    let logs = || g.logs();
    tail.wait_for(20_000, Duration::from_secs(120), &logs);

    let mode = if continuous {
        "continuous"
    } else {
        "micro-batch"
    };
    let mut sent = 20_000;
    for (name, kind, attributes) in [
        ("latency 250 ms", "latency", json!({"latency": 250})),
        ("bandwidth 64 KB/s", "bandwidth", json!({"rate": 64})),
        (
            "connections reset after 200 ms",
            "reset_peer",
            json!({"timeout": 200}),
        ),
        ("blackhole", "timeout", json!({"timeout": 0})),
    ] {
        proxy.toxic("kafka", kind, attributes);
        produce(&bootstrap, &input, &values(sent, 5_000));
        sent += 5_000;
        // The fault's window (shorter than the session timeout).
        std::thread::sleep(Duration::from_secs(3));
        proxy.heal("kafka", kind);
        let healed = Instant::now();
        tail.wait_for(sent, Duration::from_secs(120), &logs);
        eprintln!(
            "{mode}, member 1's link with {name}: all {sent} records out {} ms after the heal",
            healed.elapsed().as_millis()
        );
    }
    proxy.set_enabled("kafka", false);
    let cut = Instant::now();
    produce(&bootstrap, &input, &values(sent, 20_000));
    sent += 20_000;
    g.wait_until_held_by(&[0]);
    eprintln!(
        "{mode}: member 0 holds every partition {} ms after member 1 was cut off",
        cut.elapsed().as_millis()
    );
    tail.wait_for(sent, Duration::from_secs(120), &logs);

    proxy.set_enabled("kafka", true);
    let healed = Instant::now();
    produce(&bootstrap, &input, &values(sent, 10_000));
    sent += 10_000;
    g.wait_until_held_by(&[0, 1]);
    eprintln!(
        "{mode}: member 1 holds a share again {} ms after its link returned",
        healed.elapsed().as_millis()
    );
    tail.wait_for(sent, Duration::from_secs(120), &logs);
    g.stop_all();
    assert_uppercased_once(&g, &bootstrap, &output, sent, &format!("{mode}: "));
}

#[test]
fn micro_batch_group_fences_a_member_cut_off_from_the_broker() {
    a_member_cut_off_is_fenced_and_the_group_goes_on(false);
}

#[test]
fn continuous_group_fences_a_member_cut_off_from_the_broker() {
    a_member_cut_off_is_fenced_and_the_group_goes_on(true);
}
