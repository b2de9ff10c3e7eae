//! Attack 2: `[transform.sandbox] env` naming the server's own variables
//! (its cloud credentials, say) to hand them to the tenant's guest, or to
//! learn which exist from how a refusal reads.

use serde_json::json;

use super::{assert_refused, put};
use crate::serve::Server;

const SECRET: &str = "WEIR_ATTACK_SERVER_SECRET";

fn spec(id: &str, env: &str) -> String {
    format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\ngrants = [\"wasi:sockets\"]\n[transform.sandbox]\nenv = [{env}]\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n"
    )
}

#[test]
fn guests_see_only_the_variables_the_admin_set_for_their_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start_with(
        &data,
        &[],
        &[(SECRET, "s3cr3t"), ("HOME", "/server-home")],
        None,
    );
    let mallory = super::tenant_with(&s, "mallory", json!({"grants": ["wasi:sockets"]}));
    // The sneaky guest reports HOME as its guest sees it.
    let id = s.upload(&mallory, "sneaky");
    let set = put(&s, &mallory, "leak", &spec(&id, &format!("\"{SECRET}\"")));
    let unset = put(
        &s,
        &mallory,
        "leak",
        &spec(&id, "\"WEIR_NOT_SET_ANYWHERE\""),
    );
    assert_refused(
        set.clone(),
        400,
        "is not one of this tenant's guest variables",
        &data,
    );
    assert_refused(
        unset.clone(),
        400,
        "is not one of this tenant's guest variables",
        &data,
    );
    // The two refusals read alike: no oracle for what the server has.
    let shape =
        |v: &serde_json::Value, name: &str| v["detail"].as_str().unwrap().replace(name, "X");
    assert_eq!(
        shape(&set.1, SECRET),
        shape(&unset.1, "WEIR_NOT_SET_ANYWHERE")
    );
    // The admin gives the tenant its own HOME: the guest sees that value,
    // never the server's, and the tenant list shows names only.
    let (st, v) = s.patch_tenant("mallory", json!({"guest-env": {"HOME": "/tenant-home"}}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["guest-env"], json!(["HOME"]), "{v}");
    let (_, list) = s.call("GET", "/v1/tenants", Some(&s.admin), None);
    assert!(!list.to_string().contains("/tenant-home"), "{list}");
    let log = data.join("tenants/mallory/log");
    super::append_values(&log, &["probe"]);
    let (st, v) = put(&s, &mallory, "leak", &spec(&id, "\"HOME\""));
    assert_eq!(st, 201, "{v}");
    let v = s.wait_for(&mallory, "leak", |v| {
        v["checkpoint"]["last-committed"].as_u64().is_some()
    });
    assert!(v["checkpoint"]["last-committed"].is_u64(), "{v}");
    let out = crate::testkit::topic_values(&log, "out").unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].contains("env: HOME=/tenant-home"), "{}", out[0]);
    assert!(
        !out[0].contains("s3cr3t") && !out[0].contains("/server-home"),
        "{}",
        out[0]
    );
    // A grant the admin did not allow this tenant is refused.
    let plain = s.tenant("plain");
    let plain_id = s.upload(&plain, "sneaky");
    assert_refused(
        put(&s, &plain, "p", &spec(&plain_id, "")),
        400,
        "`wasi:sockets` is not allowed for this tenant",
        &data,
    );
    let (st, v) = s.patch_tenant("mallory", json!({"guest-env": {"BAD NAME": "x"}}));
    assert_eq!(st, 400, "{v}");
}
