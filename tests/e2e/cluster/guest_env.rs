//! What a tenant's guest may see through a cluster: the variables the
//! admin set for its tenant (their values travel in the config topic)
//! reach the guest on whichever node runs it; the server's own never do,
//! and asking for one reads like asking for one that does not exist. And
//! the numbers a pipeline file sets meet the single node's ceilings on
//! any node.

use serde_json::json;

use super::nodes::{Cluster, wait_until};
use crate::serve::Server;
use crate::serve::pipelines::put;

/// Every node is started with it in its environment.
pub(super) const SECRET: &str = "WEIR_ATTACK_SERVER_SECRET";

pub(super) fn guests_see_only_their_tenants_variables(c: &Cluster, bootstrap: &str) {
    let live: Vec<&Server> = c.live().into_iter().map(|n| &n.server).collect();
    let token = crate::serve::attacks::tenant_with(
        live[0],
        "peeker",
        json!({"kafka-brokers": [bootstrap], "grants": ["wasi:sockets"]}),
    );
    // The sneaky guest reports HOME as its guest sees it.
    let id = live[0].upload(&token, "sneaky");
    let (input, output) = (
        crate::kafka::unique("peek-in"),
        crate::kafka::unique("peek-out"),
    );
    crate::kafka::create_topic(bootstrap, &input, 1, &[]);
    crate::kafka::create_topic(bootstrap, &output, 1, &[]);
    let spec = |env: &str| {
        format!(
            "[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopics = [\"{input}\"]\nstarting-offsets = \"earliest\"\n[transform]\ncomponent = \"{id}\"\ngrants = [\"wasi:sockets\"]\n[transform.sandbox]\nenv = [{env}]\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"{bootstrap}\"\ntopic = \"{output}\"\n[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\"\n"
        )
    };
    let refused = |(st, v): (u16, serde_json::Value), name: &str| -> String {
        assert_eq!(st, 400, "{v}");
        let detail = v["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("is not one of this tenant's guest variables"),
            "{detail}"
        );
        detail.replace(name, "X")
    };
    // Through any node: the server's secret and a name set nowhere are
    // refused alike.
    let set = put(
        live[1 % live.len()],
        &token,
        "leak",
        &spec(&format!("\"{SECRET}\"")),
    );
    let unset = put(
        live[2 % live.len()],
        &token,
        "leak",
        &spec("\"WEIR_NOT_SET_ANYWHERE\""),
    );
    assert_eq!(
        refused(set, SECRET),
        refused(unset, "WEIR_NOT_SET_ANYWHERE")
    );
    // The admin gives the tenant its own HOME; the list shows names only.
    let path = "/v1/tenants/peeker";
    let (st, v) = live[0].patch_tenant("peeker", json!({"guest-env": {"HOME": "/tenant-home"}}));
    assert_eq!((st, &v["guest-env"]), (200, &json!(["HOME"])), "{v}");
    for s in &live {
        let (_, list) = s.call("GET", "/v1/tenants", Some(&c.admin), None);
        assert!(!list.to_string().contains("/tenant-home"), "{list}");
    }
    let (st, v) = put(live[0], &token, "leak", &spec("\"HOME\""));
    assert_eq!(st, 201, "{v}");
    crate::kafka::produce_numbers(bootstrap, &input, 0, 1);
    let server_home = format!("HOME={}", std::env::var("HOME").unwrap_or_default());
    let seen = wait_until(
        std::time::Instant::now() + std::time::Duration::from_secs(60),
        "the guest's report of its HOME",
        || match crate::kafka::read_committed(bootstrap, &output).pop() {
            Some((_, _, value)) => Ok(value),
            None => Err("no output yet".into()),
        },
        &|| c.logs(),
    );
    assert!(seen.contains("env: HOME=/tenant-home"), "{seen}");
    assert!(
        !seen.contains("s3cr3t") && !seen.contains(&server_home),
        "{seen}"
    );
    let (st, v) = live[0].call("DELETE", path, Some(&c.admin), None);
    assert_eq!(st, 204, "{v}");
}

/// A file's numbers over their ceilings are refused through any node,
/// naming the key, before anything runs.
pub(super) fn hostile_numbers_are_refused(c: &Cluster, token: &str, component: &str) {
    let rate = |extra: &str| {
        format!(
            "[[source]]\ntype = \"rate\"\nrows-per-second = 10\n{extra}\n[transform]\ncomponent = \"{component}\"\n[sink.default]\ntype = \"console\"\n"
        )
    };
    let limits = |l: &str| rate(&format!("[transform.limits]\n{l}"));
    let cases = [
        (
            rate("partitions = 4294967295"),
            "partitions = 4294967295 is above",
        ),
        (rate("[trigger]\nidle-poll = \"1ns\""), "trigger.idle-poll"),
        (limits("memory = \"1000GiB\""), "transform.limits.memory"),
        (
            limits("call-timeout = \"100000d\""),
            "transform.limits.call-timeout",
        ),
    ];
    for (i, (file, needle)) in cases.iter().enumerate() {
        let live = c.live();
        let s = &live[i % live.len()].server;
        let (st, v) = put(s, token, "numbers", file);
        assert_eq!(st, 400, "{needle}: {v}");
        let detail = v["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(needle), "`{needle}` not in: {detail}");
    }
    let (st, _) = c
        .any()
        .call("GET", "/v1/pipelines/numbers", Some(token), None);
    assert_eq!(st, 404, "a refused pipeline is not stored");
}
