//! The tenant and component life cycle, refused uploads that store
//! nothing, tenant isolation (another tenant's names answer 404 and change
//! nothing), and no raw token anywhere under the data directory.

use serde_json::json;

use super::{Body, Server, files_under};
use crate::testkit::guest;

#[test]
fn tenants_and_components_life_cycle_with_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    assert_eq!(
        s.call("GET", "/healthz", None, None),
        (200, json!({"status": "ok"}))
    );
    // No token, an unknown token, a tenant token on admin endpoints.
    let (st, v) = s.call("GET", "/v1/tenants", None, None);
    assert_eq!((st, v["error"].as_str()), (401, Some("unauthorized")));
    assert_eq!(s.call("GET", "/v1/tenants", Some("weir_nope"), None).0, 401);
    let acme = s.tenant("acme");
    let other = s.tenant("other");
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(json!({"name": "acme"}))),
    );
    assert_eq!((st, v["error"].as_str()), (409, Some("conflict")));
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(json!({"name": "Bad Name"}))),
    );
    assert_eq!(st, 400, "{v}");
    let (st, v) = s.call("GET", "/v1/tenants", Some(&acme), None);
    assert_eq!((st, v["error"].as_str()), (403, Some("forbidden")));
    let (st, v) = s.call("GET", "/v1/tenants", Some(&s.admin), None);
    assert_eq!(st, 200);
    assert_eq!(v.as_array().unwrap().len(), 2);

    // Upload: validated, content-addressed, idempotent.
    let bytes = std::fs::read(guest("uppercase")).unwrap();
    let id = weir_runtime::sha256_hex(&bytes);
    let (st, v) = s.call(
        "POST",
        "/v1/components",
        Some(&acme),
        Some(Body::Bytes(bytes.clone())),
    );
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["world"], "transformer");
    assert!(
        v["exports"]
            .to_string()
            .contains("weir:transform/transform"),
        "{v}"
    );
    let (st, again) = s.call(
        "POST",
        "/v1/components",
        Some(&acme),
        Some(Body::Bytes(bytes.clone())),
    );
    assert_eq!((st, &again["id"]), (200, &v["id"]));
    assert!(data.join("components").join(format!("{id}.wasm")).exists());
    let path = format!("/v1/components/{id}");
    assert_eq!(s.call("GET", &path, Some(&acme), None).0, 200);
    // The admin is not a tenant.
    assert_eq!(s.call("GET", "/v1/components", Some(&s.admin), None).0, 403);

    // Another tenant sees nothing of acme's and changes nothing.
    let (st, v) = s.call("GET", &path, Some(&other), None);
    assert_eq!((st, v["error"].as_str()), (404, Some("not-found")));
    assert_eq!(s.call("DELETE", &path, Some(&other), None).0, 404);
    assert_eq!(
        s.call("GET", "/v1/components", Some(&other), None),
        (200, json!([]))
    );
    assert_eq!(
        s.call("GET", &path, Some(&acme), None).0,
        200,
        "still there"
    );

    // Rotating a token retires the old one.
    let (st, v) = s.call("POST", "/v1/tenants/other/token", Some(&s.admin), None);
    assert_eq!(st, 200);
    assert_eq!(s.call("GET", "/v1/components", Some(&other), None).0, 401);
    let other = v["token"].as_str().unwrap().to_string();
    assert_eq!(s.call("GET", "/v1/components", Some(&other), None).0, 200);

    // No raw token is stored anywhere under the data directory.
    for f in files_under(&data) {
        let content = std::fs::read(&f).unwrap();
        for t in [&s.admin, &acme, &other] {
            assert!(
                !content.windows(t.len()).any(|w| w == t.as_bytes()),
                "{} holds a raw token",
                f.display()
            );
        }
    }

    // Delete: the bytes go when no tenant has them.
    assert_eq!(s.call("DELETE", &path, Some(&acme), None).0, 204);
    assert_eq!(s.call("GET", &path, Some(&acme), None).0, 404);
    assert!(!data.join("components").join(format!("{id}.wasm")).exists());
    assert_eq!(
        s.call("DELETE", "/v1/tenants/other", Some(&s.admin), None)
            .0,
        204
    );
    assert_eq!(s.call("GET", "/v1/components", Some(&other), None).0, 401);
    assert_eq!(s.call("GET", "/v1/nothing", Some(&acme), None).0, 404);
}

#[test]
fn bad_uploads_are_refused_with_their_reason_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &["--max-component-size", "256KiB"]);
    let acme = s.tenant("acme");
    let upload = |bytes: Vec<u8>| {
        s.call(
            "POST",
            "/v1/components",
            Some(&acme),
            Some(Body::Bytes(bytes)),
        )
    };
    let (st, v) = upload(b"hello, I am text".to_vec());
    assert_eq!(
        (st, v["error"].as_str()),
        (400, Some("invalid-component")),
        "{v}"
    );
    let (st, v) = upload(wat::parse_str("(module (func (export \"f\")))").unwrap());
    assert_eq!(st, 400, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("core"), "{v}");
    let (st, v) = upload(std::fs::read(guest("not-a-transform")).unwrap());
    assert_eq!(st, 400, "{v}");
    assert!(
        !v["detail"].as_str().unwrap().contains("/tmp/"),
        "names the upload: {v}"
    );
    let (st, v) = upload(vec![0u8; 300 << 10]);
    assert_eq!((st, v["error"].as_str()), (413, Some("too-large")), "{v}");
    assert_eq!(
        s.call("GET", "/v1/components", Some(&acme), None),
        (200, json!([]))
    );
    assert!(files_under(&data.join("components")).is_empty());
    assert!(files_under(&data.join("tmp")).is_empty());

    // Over the tenant's component storage quota: 403, nothing stored.
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(
            json!({"name": "small", "max-component-bytes": "1KiB"}),
        )),
    );
    assert_eq!(st, 201, "{v}");
    let small = v["token"].as_str().unwrap().to_string();
    let (st, v) = s.call(
        "POST",
        "/v1/components",
        Some(&small),
        Some(Body::Bytes(std::fs::read(guest("uppercase")).unwrap())),
    );
    assert_eq!(
        (st, v["error"].as_str()),
        (403, Some("quota-exceeded")),
        "{v}"
    );
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("may store 1024 bytes"),
        "{v}"
    );
    assert!(files_under(&data.join("components")).is_empty());
}
