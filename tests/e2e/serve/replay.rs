//! Replay through the API, as the dashboard calls it, and the admin acting
//! for a tenant.

use serde_json::json;

use super::pipelines::{append_values, put};
use super::{Body, Server};

/// `record <n>` values uppercased to files, in batches of 1,000.
pub(crate) const SHOP: &str = r#"
[[source]]
type = "log"
path = "log"
topic = "in"
max-records-per-trigger = 1000
[transform]
component = "COMPONENT"
[sink.default]
type = "files"
path = "out"
"#;

#[test]
fn replay_whoami_and_the_admin_acting_for_a_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let other = s.tenant("other");
    let values: Vec<String> = (0..5000).map(|i| format!("record {i}")).collect();
    append_values(&data.join("tenants/acme/log"), &values);
    let upper = s.upload(&acme, "uppercase");
    let canary = s.upload(&acme, "uppercase-canary");
    let (st, v) = put(&s, &acme, "shop", &SHOP.replace("COMPONENT", &upper));
    assert_eq!(st, 201, "{v}");
    s.wait_committed(&acme, "shop", 4);

    let replay = |token: &str, body: serde_json::Value| {
        s.call(
            "POST",
            "/v1/pipelines/shop/replay",
            Some(token),
            Some(Body::Json(body)),
        )
    };
    let (st, r) = replay(&acme, json!({"component": upper}));
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["total-differences"], 0);
    assert_eq!(r["batches"].as_array().unwrap().len(), 5);
    let (st, r) = replay(
        &acme,
        json!({"component": canary, "from": 1, "to": 2, "shown": 1}),
    );
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["total-differences"], 2);
    let d = &r["batches"][0]["outputs"][0]["first-differences"][0];
    assert_eq!(
        (d["live"].as_str(), d["candidate"].as_str()),
        (Some("RECORD 1999"), Some("RECORD 1999!"))
    );

    // Refusals: JSON errors with a reason.
    let (st, e) = replay(&acme, json!({"component": upper, "to": 99}));
    assert_eq!(st, 400, "{e}");
    assert!(
        e["detail"].as_str().unwrap().contains("not committed"),
        "{e}"
    );
    let (st, e) = replay(&acme, json!({"component": "feed"}));
    assert_eq!(st, 400, "{e}");
    let (st, e) = replay(&acme, json!({"component": upper, "batches": 3}));
    assert_eq!(st, 400, "{e}");
    assert_eq!(e["error"], "bad-request", "{e}");
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .contains("unknown field `batches`"),
        "{e}"
    );
    // Another tenant's pipeline does not exist for it.
    let (st, _) = replay(&other, json!({"component": upper}));
    assert_eq!(st, 404);

    // Who is calling; the admin lists every pipeline and, naming the
    // tenant, acts for it.
    assert_eq!(
        s.call("GET", "/v1/whoami", Some(&acme), None).1,
        json!({"role": "tenant", "tenant": "acme"})
    );
    assert_eq!(
        s.call("GET", "/v1/whoami", Some(&s.admin), None).1,
        json!({"role": "admin"})
    );
    let (st, all) = s.call("GET", "/v1/pipelines", Some(&s.admin), None);
    assert_eq!(st, 200);
    assert_eq!(all[0]["tenant"], "acme");
    assert_eq!(all[0]["mode"], "micro-batch");
    assert_eq!(all[0]["metrics"]["input-rows"], 5000);
    let (st, _) = s.call("GET", "/v1/pipelines/shop", Some(&s.admin), None);
    assert_eq!(st, 403);
    let mut r = s
        .http
        .get(&format!("{}/v1/pipelines/shop", s.base))
        .header("Authorization", &format!("Bearer {}", s.admin))
        .header("Weir-Tenant", "acme")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let shop: serde_json::Value = r.body_mut().read_json().unwrap();
    assert_eq!(shop["checkpoint"]["unit"], "batch");
    assert_eq!(shop["checkpoint"]["last-committed"], 4);
    assert!(shop["spec"].as_str().unwrap().contains(&upper), "{shop}");
    assert!(!shop["spec"].as_str().unwrap().contains(".wasm"), "{shop}");
}
