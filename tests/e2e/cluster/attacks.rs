//! The tenancy rules against one node of the cluster: a tenant cannot see
//! or touch another's pipeline or component there, nor reach the cluster's
//! own view; a pipeline naming a broker off its allow-list, its own
//! checkpoint or a node's disk is refused with its reason, and nothing of
//! them is stored.

use serde_json::Value;

use super::Tenants;
use super::nodes::Cluster;
use super::workload::{Deployed, Kind};
use crate::serve::Server;
use crate::serve::pipelines::put;

/// A refusal: `status`, and an API error whose detail holds `needle`.
fn refused(got: (u16, Value), status: u16, needle: &str, what: &str) {
    let (st, v) = got;
    assert_eq!(st, status, "{what}: {v}");
    let detail = v["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: not an API error: {v}"));
    assert!(v["error"].is_string(), "{what}: {v}");
    assert!(
        detail.contains(needle),
        "{what}: `{needle}` not in: {detail}"
    );
}

/// A pipeline file with these source and sink lines.
fn text(top: &str, source: &str, component: &str, sink: &str) -> String {
    format!(
        "{top}\n[[source]]\n{source}\n[transform]\ncomponent = \"{component}\"\n[sink.default]\n{sink}\n"
    )
}

/// acme attacks globex through node `k`.
pub(super) fn tenancy_holds_on(
    c: &Cluster,
    k: usize,
    t: &Tenants,
    ps: &[Deployed],
    bootstrap: &str,
) {
    let s: &Server = c.server(k);
    let (acme, globex) = (&t.tokens["acme"], &t.tokens["globex"]);
    let victim = ps
        .iter()
        .find(|p| p.tenant == "globex" && p.kind == Kind::Windows)
        .expect("a windowed count of globex's");
    let path = format!("/v1/pipelines/{}", victim.name);

    // Another tenant's pipeline: not found, whatever is asked of it.
    let (st, v) = s.call("GET", &path, Some(acme), None);
    assert_eq!((st, v["error"].as_str()), (404, Some("not-found")), "{v}");
    for action in ["stop", "start"] {
        let p = format!("{path}/{action}");
        assert_eq!(s.call("POST", &p, Some(acme), None).0, 404, "{p}");
    }
    assert_eq!(s.call("DELETE", &path, Some(acme), None).0, 404);
    let purge = format!("{path}?purge=true");
    assert_eq!(s.call("DELETE", &purge, Some(acme), None).0, 404);
    // Another tenant's component: not found, not deletable, not usable.
    let component = format!("/v1/components/{}", t.windows);
    let (st, v) = s.call("GET", &component, Some(acme), None);
    assert_eq!((st, v["error"].as_str()), (404, Some("not-found")), "{v}");
    assert_eq!(s.call("DELETE", &component, Some(acme), None).0, 404);
    let (st, v) = s.call("GET", "/v1/components", Some(acme), None);
    assert_eq!(st, 200, "{v}");
    assert!(
        !v.to_string().contains(&t.windows),
        "acme lists globex's component: {v}"
    );
    // The cluster's view and the tenants are the admin's.
    let (st, v) = s.call("GET", "/v1/cluster", Some(acme), None);
    assert_eq!((st, v["error"].as_str()), (403, Some("forbidden")), "{v}");
    assert_eq!(s.call("GET", "/v1/cluster", None, None).0, 401);
    assert_eq!(s.call("GET", "/v1/cluster", Some("weir_nope"), None).0, 401);
    assert_eq!(s.call("GET", "/v1/tenants", Some(acme), None).0, 403);
    // Its metrics, on a node that runs the other tenant's pipelines too:
    // its own samples only, and none of the cluster's series.
    let own = s.metrics(acme);
    assert!(own.contains("tenant=\"acme\""), "{own}");
    assert!(
        !own.contains("globex") && !own.contains("weir_cluster_"),
        "acme's /metrics shows another tenant's or the cluster's series:\n{own}"
    );

    // Pipelines that would leave the tenant's bounds, each refused with
    // its reason. acme's own topics, and its own component otherwise.
    let own = ps
        .iter()
        .find(|p| p.tenant == "acme" && matches!(p.kind, Kind::Upper | Kind::Continuous))
        .expect("an uppercase pipeline of acme's");
    let source = format!(
        "type = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopics = [\"{}\"]",
        own.input
    );
    let sink = format!(
        "type = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopic = \"{}\"",
        own.output
    );
    let elsewhere = "127.0.0.1:1";
    let far_source = source.replace(bootstrap, elsewhere);
    let far_sink = sink.replace(bootstrap, elsewhere);
    let log_source = "type = \"log\"\npath = \"log\"\ntopic = \"in\"";
    let files_sink = "type = \"files\"\npath = \"out\"";
    let upper = t.upper.as_str();
    // The control plane on the tenant's own allowed broker: its records
    // hold every tenant's rows, and one written there would forge them.
    let config_topic = format!("{}.config", c.prefix);
    let control_sink = sink.replace(&own.output, &config_topic);
    let control_source = source.replace(&own.input, &config_topic);
    let nodes_group = format!(
        "[group]\nid = \"{}.nodes\"\nsession-timeout = \"6s\"",
        c.prefix
    );
    for (file, needle, what) in [
        (
            text("", &source, upper, &control_sink),
            "the cluster's control plane",
            "a sink into the config topic",
        ),
        (
            text("", &control_source, upper, &sink),
            "the cluster's control plane",
            "a source reading the config topic",
        ),
        (
            text(&nodes_group, &source, upper, &sink),
            "the cluster's control plane",
            "a group joining the nodes' group",
        ),
        (
            text("", &far_source, upper, &sink),
            "not on this tenant's allow-list",
            "a source broker off the allow-list",
        ),
        (
            text("", &source, upper, &far_sink),
            "not on this tenant's allow-list",
            "a sink broker off the allow-list",
        ),
        (
            text(
                "checkpoint = \"s3://other-bucket/x\"",
                &source,
                upper,
                &sink,
            ),
            "checkpoint",
            "a checkpoint in another bucket",
        ),
        (
            text("", &source, upper, files_sink),
            "cluster mode",
            "a files sink",
        ),
        (
            text("", log_source, upper, &sink),
            "cluster mode",
            "an embedded-log source",
        ),
        (
            text("", &source, &t.windows, &sink),
            "component",
            "globex's component",
        ),
        // Client properties that would read the node's files or load code.
        (
            text(
                "",
                &format!("{source}\n[source.properties]\n\"ssl.key.location\" = \"/etc/shadow\""),
                upper,
                &sink,
            ),
            "`ssl.key.location` is not allowed",
            "a source reading a node's file through a client property",
        ),
        (
            text(
                "",
                &source,
                upper,
                &format!(
                    "{sink}\n[sink.default.properties]\n\"plugin.library.paths\" = \"/tmp/evil.so\""
                ),
            ),
            "`plugin.library.paths` is not allowed",
            "a sink loading a library through a client property",
        ),
    ] {
        refused(put(s, acme, "intruder", &file), 400, needle, what);
    }
    assert_eq!(
        s.call("GET", "/v1/pipelines/intruder", Some(acme), None).0,
        404,
        "a refused pipeline is not stored"
    );

    // The victim runs on, as its owner sees it on every live node.
    for n in c.live() {
        let (st, v) = n.server.call("GET", &path, Some(globex), None);
        assert_eq!(st, 200, "{v}");
        assert_eq!(
            (v["state"].as_str(), v["desired"].as_str()),
            (Some("running"), Some("running")),
            "globex's {} on {}: {v}",
            victim.name,
            n.name
        );
    }
    let (st, v) = s.call("GET", &component, Some(globex), None);
    assert_eq!(st, 200, "globex's component is still there: {v}");
}

/// A tenant allowed 3 pipelines PUTs 9 at once through every live node:
/// exactly 3 are created, the others refused with 403 `quota-exceeded`,
/// and every node lists the same 3. Deleted after, its pipelines stop
/// wherever they ran.
pub(super) fn quotas_count_every_node(c: &Cluster, t: &Tenants, ps: &[Deployed], bootstrap: &str) {
    let admin = c.admin.as_str();
    let body = serde_json::json!({
        "name": "hoarder",
        "kafka-brokers": [bootstrap],
        "max-pipelines": 3,
        "max-requests-per-second": 1000,
    });
    let (st, v) = c.any().call(
        "POST",
        "/v1/tenants",
        Some(admin),
        Some(crate::serve::Body::Json(body)),
    );
    assert_eq!(st, 201, "{v}");
    let token = v["token"].as_str().unwrap().to_string();
    let id = c.any().upload(&token, "uppercase");
    assert_eq!(id, t.upper, "the same bytes, the same id");
    let source = ps
        .iter()
        .find(|p| matches!(p.kind, Kind::Upper | Kind::Continuous))
        .expect("an uppercase pipeline");
    let live: Vec<&Server> = c.live().into_iter().map(|n| &n.server).collect();
    // Every node must know the tenant and its component before the race.
    for s in &live {
        super::nodes::wait_until(
            std::time::Instant::now() + std::time::Duration::from_secs(30),
            "every node knowing the hoarder's component",
            || match s.call("GET", &format!("/v1/components/{id}"), Some(&token), None) {
                (200, _) => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
    }
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..9)
            .map(|i| {
                let s = live[i % live.len()];
                let (token, id) = (&token, &id);
                let file = text(
                    "",
                    &format!(
                        "type = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopics = [\"{}\"]",
                        source.input
                    ),
                    id,
                    &format!(
                        "type = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopic = \"hoarded-{i}\""
                    ),
                );
                scope.spawn(move || put(s, token, &format!("h{i}"), &file))
            })
            .collect();
        calls.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let created = answers.iter().filter(|(st, _)| *st == 201).count();
    assert_eq!(created, 3, "created past the quota: {answers:?}");
    for (st, v) in answers.iter().filter(|(st, _)| *st != 201) {
        assert_eq!(
            (*st, v["error"].as_str()),
            (403, Some("quota-exceeded")),
            "{v}"
        );
    }
    for s in &live {
        super::nodes::wait_until(
            std::time::Instant::now() + std::time::Duration::from_secs(30),
            "every node listing the hoarder's 3 pipelines",
            || match s.call("GET", "/v1/pipelines", Some(&token), None) {
                (200, v) if v.as_array().is_some_and(|a| a.len() == 3) => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
    }
    let (st, v) = c
        .any()
        .call("DELETE", "/v1/tenants/hoarder", Some(admin), None);
    assert_eq!(st, 204, "{v}");
    for s in &live {
        super::nodes::wait_until(
            std::time::Instant::now() + std::time::Duration::from_secs(30),
            "every node forgetting the hoarder",
            || match s.call("GET", "/v1/pipelines", Some(admin), None) {
                (200, v) if !v.to_string().contains("\"hoarder\"") => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        );
    }
}

/// A stateful pipeline's component swapped through the cluster: put
/// through one node without `?upgrade=true`, its node refuses to start it
/// (`failed`, naming `?upgrade=true`) and every node shows so; put again
/// with it through another node, it runs.
pub(super) fn an_upgrade_is_honoured_where_it_starts(c: &Cluster, bootstrap: &str) {
    let admin = c.admin.as_str();
    let body = serde_json::json!({"name": "swapper", "kafka-brokers": [bootstrap]});
    let (st, v) = c.any().call(
        "POST",
        "/v1/tenants",
        Some(admin),
        Some(crate::serve::Body::Json(body)),
    );
    assert_eq!(st, 201, "{v}");
    let token = v["token"].as_str().unwrap().to_string();
    let dedup = c.any().upload(&token, "dedup");
    let counts = c.any().upload(&token, "window-count");
    let (input, output) = (
        crate::kafka::unique("swap-in"),
        crate::kafka::unique("swap-out"),
    );
    crate::kafka::create_topic(bootstrap, &input, 2, &[]);
    crate::kafka::create_topic(bootstrap, &output, 1, &[]);
    crate::kafka::produce_numbers(bootstrap, &input, 0, 50);
    let spec = |id: &str| {
        format!(
            "[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopics = [\"{input}\"]\nstarting-offsets = \"earliest\"\n[state]\nkey-field = \"id\"\n[transform]\ncomponent = \"{id}\"\n[transform.config]\nkey-field = \"id\"\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopic = \"{output}\"\n[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\"\n"
        )
    };
    let live: Vec<&Server> = c.live().into_iter().map(|n| &n.server).collect();
    let shown = |s: &Server, want: &dyn Fn(&Value) -> bool, what: &str| {
        super::nodes::wait_until(
            std::time::Instant::now() + std::time::Duration::from_secs(60),
            what,
            || match s.call("GET", "/v1/pipelines/keyed", Some(&token), None) {
                (200, v) if want(&v) => Ok(()),
                (st, v) => Err(format!("{st} {v}")),
            },
            &|| c.logs(),
        )
    };
    let (st, v) = put(live[0], &token, "keyed", &spec(&dedup));
    assert_eq!(st, 201, "{v}");
    // Running, with state in its checkpoint (the input is read).
    super::nodes::wait_until(
        std::time::Instant::now() + std::time::Duration::from_secs(60),
        "the dedup pipeline's output",
        || match crate::kafka::read_committed(bootstrap, &output).len() {
            0 => Err("no output yet".into()),
            _ => Ok(()),
        },
        &|| c.logs(),
    );
    let (st, v) = put(live[1], &token, "keyed", &spec(&counts));
    assert_eq!(st, 200, "accepted where it is received: {v}");
    for s in &live {
        shown(
            s,
            &|v| {
                v["state"] == "failed"
                    && v["last-error"]
                        .as_str()
                        .is_some_and(|e| e.contains("?upgrade=true"))
            },
            "every node showing the swap refused, naming ?upgrade=true",
        );
    }
    let url = format!(
        "{}/v1/pipelines/keyed?upgrade=true",
        live[2 % live.len()].base
    );
    let mut r = live[2 % live.len()]
        .http
        .put(&url)
        .header("Authorization", &format!("Bearer {token}"))
        .send(spec(&counts).as_str())
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        200,
        "{}",
        r.body_mut().read_to_string().unwrap_or_default()
    );
    for s in &live {
        shown(
            s,
            &|v| v["state"] == "running" && v["component"] == counts.as_str(),
            "every node showing the swapped component running",
        );
    }
    let (st, v) = c
        .any()
        .call("DELETE", "/v1/tenants/swapper", Some(admin), None);
    assert_eq!(st, 204, "{v}");
}
