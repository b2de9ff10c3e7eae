//! `weir serve`'s SQLite database through power cuts: every write the API
//! acknowledged (the admin token, tenants and their tokens, an uploaded
//! component and its bytes) is there after the server is SIGKILLed, the
//! power goes, and it restarts.

use serde_json::json;

use super::{cut, power_mount};
use crate::serve::{Body, Server};
use crate::testkit::xorshift;

#[test]
fn acknowledged_service_writes_survive_power_cuts() {
    let (_dir, mount) = power_mount();
    let data = mount.path().join("data");
    let mut next = xorshift(0x5eed_0007);
    let mut s = Server::start(&data, &[]);
    let admin = s.admin.clone();
    let acme = s.tenant("acme");
    let component = s.upload(&acme, "uppercase");
    let wasm = std::fs::read(crate::testkit::guest("uppercase")).unwrap();
    let mut tenants: Vec<String> = vec!["acme".into()];
    for round in 0..6 {
        for i in 0..3 {
            let name = format!("t{round}x{i}");
            let (status, body) = s.call(
                "POST",
                "/v1/tenants",
                Some(&admin),
                Some(Body::Json(json!({ "name": name }))),
            );
            assert_eq!(status, 201, "{body}");
            tenants.push(name);
        }
        drop(s); // SIGKILL
        cut(&mount, next());
        s = Server::restart(&data, &admin);
        let (status, list) = s.call("GET", "/v1/tenants", Some(&admin), None);
        assert_eq!(status, 200, "the admin token after a power cut: {list}");
        let mut listed: Vec<String> = list
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        listed.sort();
        let mut want = tenants.clone();
        want.sort();
        assert_eq!(listed, want, "after power cut {}", round + 1);
        let (status, c) = s.call(
            "GET",
            &format!("/v1/components/{component}"),
            Some(&acme),
            None,
        );
        assert_eq!(status, 200, "the tenant's token and component: {c}");
        let stored = std::fs::read(data.join("components").join(format!("{component}.wasm")));
        assert_eq!(stored.ok().as_ref(), Some(&wasm), "the component's bytes");
    }
    assert_eq!(mount.cuts(), 6);
}
