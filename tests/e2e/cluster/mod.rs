//! `weir serve --cluster`: three (then four) `weir serve` processes on the
//! shared test broker (their control plane) and one bucket of the S3
//! server (components and checkpoints). An admin creates two tenants on
//! node 1; they deploy 30 Kafka -> guest -> Kafka pipelines through nodes 2
//! and 3 (uppercase in both modes, three windowed counts, one group
//! pipeline). Every node lists them alike, spread over the nodes; a node
//! SIGKILLed has its pipelines running on the others within the session
//! timeout and the lease's; a node stopped (SIGSTOP) past its session loses
//! them, and resumed is fenced; a fourth node takes slots. Every output, read
//! with read_committed, equals its input transformed exactly once (the
//! windowed counts equal the reference computed here), and the tenancy
//! rules hold against a cluster node.

mod abuse;
mod attacks;
mod guest_env;
mod nodes;
mod views;
mod workload;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::kafka::broker;
use crate::serve::pipelines::put;
use nodes::{Cluster, wait_until};
use views::{on_node, placements};
use workload::{Deployed, Kind, Outputs, PIPELINES, TENANTS, feed_all};

/// The tenants' tokens and the ids of the guests they uploaded.
pub(super) struct Tenants {
    pub tokens: BTreeMap<&'static str, String>,
    /// The uppercase guest (both tenants uploaded it: the same id).
    pub upper: String,
    /// The windowed count (globex's only).
    pub windows: String,
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Node `k` answers `token`'s `GET path` with 200 (it has read the record
/// another node wrote), or says what it answered.
fn known(c: &Cluster, k: usize, token: &str, path: &str) -> Result<(), String> {
    match c.server(k).call("GET", path, Some(token), None) {
        (200, _) => Ok(()),
        (st, v) => Err(format!("node-{k}: GET {path}: {st} {v}")),
    }
}

/// The admin creates the tenants on node 1 (allowed the test broker); acme
/// uploads through node 2, globex through node 3, and each of those nodes
/// comes to know the other's uploads.
fn tenants(c: &Cluster, bootstrap: &str) -> Tenants {
    let logs = || c.logs();
    let mut tokens = BTreeMap::new();
    for name in TENANTS {
        let extra = json!({
            "kafka-brokers": [bootstrap],
            "max-pipelines": 40,
            "max-requests-per-second": 1000,
        });
        let token = crate::serve::attacks::tenant_with(c.server(1), name, extra);
        tokens.insert(name, token);
    }
    // Node 1 read its own writes; the others learn them shortly after.
    for name in TENANTS {
        known(c, 1, &tokens[name], "/v1/components").unwrap();
        for k in [2, 3] {
            let what = format!("node-{k} knows tenant {name}");
            let probe = || known(c, k, &tokens[name], "/v1/components");
            wait_until(Instant::now() + secs(30), &what, probe, &logs);
        }
    }
    let upper = c.server(2).upload(&tokens["acme"], "uppercase");
    let again = c.server(3).upload(&tokens["globex"], "uppercase");
    assert_eq!(upper, again, "components are named by their bytes");
    let windows = c.server(3).upload(&tokens["globex"], "window_count");
    for (k, tenant, id) in [
        (3, "acme", &upper),
        (2, "globex", &upper),
        (2, "globex", &windows),
    ] {
        let path = format!("/v1/components/{id}");
        let what = format!("node-{k} knows {tenant}'s component {id}");
        let probe = || known(c, k, &tokens[tenant], &path);
        wait_until(Instant::now() + secs(30), &what, probe, &logs);
    }
    Tenants {
        tokens,
        upper,
        windows,
    }
}

/// Each pipeline through the node its tenant uses for it; each is shown at
/// once by the node that took it (read-your-writes).
fn deploy(c: &Cluster, t: &Tenants, ps: &[Deployed], bootstrap: &str) {
    for p in ps {
        let token = &t.tokens[p.tenant];
        let component = if p.kind == Kind::Windows {
            &t.windows
        } else {
            &t.upper
        };
        let s = c.server(p.via);
        let (st, v) = put(s, token, &p.name, &p.spec(bootstrap, component));
        assert_eq!(
            st, 201,
            "{}/{} through node-{}: {v}",
            p.tenant, p.name, p.via
        );
        let (st, v) = s.call(
            "GET",
            &format!("/v1/pipelines/{}", p.name),
            Some(token),
            None,
        );
        assert_eq!(st, 200, "node-{} does not show what it took: {v}", p.via);
    }
}

/// Every live node lists each tenant exactly its own pipelines.
fn own_lists(c: &Cluster, t: &Tenants, ps: &[Deployed]) {
    for n in c.live() {
        for tenant in TENANTS {
            let (st, v) = n
                .server
                .call("GET", "/v1/pipelines", Some(&t.tokens[tenant]), None);
            assert_eq!(st, 200, "{v}");
            let list = v.as_array().unwrap();
            assert!(
                list.iter().all(|p| p["tenant"] == tenant),
                "{} shows {tenant} another's pipeline: {v}",
                n.name
            );
            let mut got: Vec<&str> = list.iter().filter_map(|p| p["name"].as_str()).collect();
            got.sort();
            let want: Vec<&str> = ps
                .iter()
                .filter(|p| p.tenant == tenant)
                .map(|p| p.name.as_str())
                .collect();
            assert_eq!(got, want, "{tenant}'s pipelines on {}", n.name);
        }
    }
}

#[test]
fn a_cluster_of_serve_nodes_runs_every_pipeline_exactly_once_through_kills_stalls_and_joins() {
    let bootstrap = broker();
    let mut ps = workload::plan(bootstrap);
    let mut c = Cluster::start(bootstrap, 3);
    let mut t = tenants(&c, bootstrap);
    let deployed = Instant::now();
    deploy(&c, &t, &ps, bootstrap);

    // Every node lists all 30 alike, all running, spread over the nodes.
    let placed = wait_until(
        deployed + secs(90),
        "all pipelines running, listed alike by every node, on every node",
        || c.steady(PIPELINES, true),
        &|| c.logs(),
    );
    eprintln!(
        "cluster: {PIPELINES} pipelines running on 3 nodes {} ms after the first PUT",
        deployed.elapsed().as_millis()
    );
    for p in &ps {
        let pl = &placed[&p.key()];
        let group = p.kind == Kind::Group;
        assert_eq!(
            (pl.node.is_none(), pl.members.is_some()),
            (group, group),
            "{}/{}: {pl:?}",
            p.tenant,
            p.name
        );
    }
    own_lists(&c, &t, &ps);

    let mut out = Outputs::new(bootstrap, &ps);
    feed_all(&mut ps, bootstrap, 1);
    out.wait_all(&ps, secs(120), "first round", &|| c.logs());

    // SIGKILL node 2 between two halves of a round: its pipelines run again
    // on nodes 1 and 3 within the session timeout and the lease's.
    let before = placements(c.server(1), &c.admin).unwrap();
    let on_2 = on_node(&before, "node-2");
    assert!(on_2.len() > 1, "node-2 runs {on_2:?}");
    feed_all(&mut ps, bootstrap, 2);
    let killed = Instant::now();
    c.kill(2);
    feed_all(&mut ps, bootstrap, 2);
    wait_until(
        killed + secs(45),
        "node-2's pipelines running on the live nodes",
        || c.moved(&on_2, "node-2"),
        &|| c.logs(),
    );
    eprintln!(
        "cluster: node-2's {} pipelines running elsewhere {} ms after its SIGKILL",
        on_2.len(),
        killed.elapsed().as_millis()
    );
    wait_until(
        Instant::now() + secs(60),
        "settled on nodes 1 and 3",
        || c.steady(PIPELINES, false),
        &|| c.logs(),
    );
    out.wait_all(&ps, secs(120), "after node-2's SIGKILL", &|| c.logs());

    // SIGSTOP node 3 with input in flight: past its session it is dead to
    // the others and node 1 runs everything.
    let before = placements(c.server(1), &c.admin).unwrap();
    let on_3 = on_node(&before, "node-3");
    assert!(!on_3.is_empty(), "node-3 runs nothing");
    feed_all(&mut ps, bootstrap, 2);
    let stopped = Instant::now();
    c.stop(3);
    wait_until(
        stopped + secs(30),
        "node-3 seen dead",
        || c.sees_dead("node-3"),
        &|| c.logs(),
    );
    eprintln!(
        "cluster: node-3 shown dead {} ms after its SIGSTOP",
        stopped.elapsed().as_millis()
    );
    wait_until(
        stopped + secs(60),
        "node-3's pipelines running on node-1",
        || c.moved(&on_3, "node-3"),
        &|| c.logs(),
    );
    eprintln!(
        "cluster: node-3's {} pipelines running on node-1 {} ms after its SIGSTOP",
        on_3.len(),
        stopped.elapsed().as_millis()
    );
    feed_all(&mut ps, bootstrap, 2);
    wait_until(
        Instant::now() + secs(60),
        "settled on node 1 alone",
        || c.steady(PIPELINES, false),
        &|| c.logs(),
    );
    out.wait_all(&ps, secs(120), "with node-3 stopped", &|| c.logs());
    // Resumed, node 3 is fenced (whatever it had in flight never shows in
    // the outputs: the exact comparison below), rejoins, and every
    // pipeline runs.
    c.resume(3);
    let resumed = Instant::now();
    wait_until(
        resumed + secs(60),
        "node-3 alive again, everything running",
        || c.steady(PIPELINES, false),
        &|| c.logs(),
    );
    eprintln!(
        "cluster: node-3 back {} ms after its SIGCONT",
        resumed.elapsed().as_millis()
    );

    // A fourth node takes slots, and pipelines with them.
    c.add_node();
    let joined = Instant::now();
    let placed = wait_until(
        joined + secs(60),
        "node-4 holding slots and running pipelines",
        || c.steady(PIPELINES, true),
        &|| c.logs(),
    );
    eprintln!(
        "cluster: node-4 runs {} pipelines {} ms after it started",
        on_node(&placed, "node-4").len(),
        joined.elapsed().as_millis()
    );
    own_lists(&c, &t, &ps);

    // Stopped through one node, a pipeline stops wherever it ran, and
    // every node says so; started through another, it runs again and
    // loses nothing (the exact comparison below).
    let paused = ps
        .iter()
        .find(|p| matches!(p.kind, Kind::Upper | Kind::Continuous))
        .expect("an uppercase pipeline");
    let token = &t.tokens[paused.tenant];
    let path = format!("/v1/pipelines/{}", paused.name);
    let (st, v) = c
        .server(3)
        .call("POST", &format!("{path}/stop"), Some(token), None);
    assert_eq!(st, 200, "{v}");
    for k in [1, 3, 4] {
        wait_until(
            Instant::now() + secs(30),
            &format!("node-{k} showing {} stopped", paused.name),
            || match c.server(k).call("GET", &path, Some(token), None) {
                (200, v) if v["state"] == "stopped" && v["node"].is_null() => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
    }
    let (st, v) = c
        .server(4)
        .call("POST", &format!("{path}/start"), Some(token), None);
    assert_eq!(st, 200, "{v}");
    wait_until(
        Instant::now() + secs(60),
        "everything running again",
        || c.steady(PIPELINES, false),
        &|| c.logs(),
    );

    // A rolling restart of node 1 with input in flight: on SIGTERM it stops
    // its pipelines and leaves the group, so they run on the others well
    // within a session timeout of its exit; back, it takes slots again.
    let now = placements(c.server(3), &c.admin).unwrap();
    let on_1 = on_node(&now, "node-1");
    assert!(!on_1.is_empty(), "node-1 runs nothing");
    feed_all(&mut ps, bootstrap, 2);
    let exited = c.terminate(1);
    wait_until(
        exited + nodes::SESSION,
        "node-1's pipelines running elsewhere within a session timeout of its exit",
        || c.moved(&on_1, "node-1"),
        &|| c.logs(),
    );
    let handed_over = exited.elapsed();
    eprintln!(
        "cluster: node-1's {} pipelines running elsewhere {} ms after its SIGTERM exit",
        on_1.len(),
        handed_over.as_millis()
    );
    // Left, not timed out: the others did not wait for its session to end.
    assert!(
        handed_over < nodes::SESSION,
        "node-1's pipelines moved only after {handed_over:?}, its session timeout"
    );
    feed_all(&mut ps, bootstrap, 2);
    c.start_again(1);
    wait_until(
        Instant::now() + secs(60),
        "node-1 back, everything running",
        || c.steady(PIPELINES, false),
        &|| c.logs(),
    );
    out.wait_all(&ps, secs(120), "after node-1's restart", &|| c.logs());

    // The tenancy rules against node 3 (stopped and resumed before).
    attacks::tenancy_holds_on(&c, 3, &t, &ps, bootstrap);
    attacks::quotas_count_every_node(&c, &t, &ps, bootstrap);
    attacks::an_upgrade_is_honoured_where_it_starts(&c, bootstrap);
    guest_env::guests_see_only_their_tenants_variables(&c, bootstrap);
    guest_env::hostile_numbers_are_refused(&c, &t.tokens["acme"], &t.upper);
    abuse::the_edge_holds_on(&c, 4, &t);
    abuse::a_flood_is_held_to_the_rate_across_nodes(&c, &t);
    let rotated = abuse::logs_reach_their_tenant_through_any_node(&c, &t, bootstrap);
    t.tokens.insert("acme", rotated);

    // The last round, then what closes every window.
    feed_all(&mut ps, bootstrap, 1);
    for p in &mut ps {
        p.flush(bootstrap);
    }
    out.wait_all(&ps, secs(180), "last round", &|| c.logs());
    let failures: Vec<String> = std::thread::scope(|s| {
        let checks: Vec<_> = ps
            .iter()
            .map(|p| s.spawn(move || p.check(bootstrap)))
            .collect();
        checks
            .into_iter()
            .filter_map(|h| h.join().unwrap().err())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "outputs differ from their inputs transformed exactly once:\n{}\n{}",
        failures.join("\n"),
        c.logs()
    );
    wait_until(
        Instant::now() + secs(30),
        "weir_cluster_* gauges agreeing",
        || c.gauges_agree(),
        &|| c.logs(),
    );
}
