//! Attack 6: many requests at once, each passing a quota check that only
//! one of them fits (pipelines, component bytes).

use std::sync::{Arc, Barrier};

use serde_json::json;

use super::{put, tenant_with};
use crate::serve::{Body, Server};

/// `bytes` with a custom section appended: another valid component (another
/// id) that behaves the same.
fn variant(bytes: &[u8], i: u8) -> Vec<u8> {
    let name = b"weir-attack";
    let payload = [i; 8];
    let mut out = bytes.to_vec();
    out.push(0); // custom section
    out.push((1 + name.len() + payload.len()) as u8);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

#[test]
fn parallel_requests_cannot_pass_a_quota_together() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Arc::new(Server::start(&data, &[]));
    let bytes = std::fs::read(crate::testkit::guest("uppercase")).unwrap();
    let quota = bytes.len() as u64 * 7 / 2;
    let mallory = tenant_with(
        &s,
        "mallory",
        json!({"max-pipelines": 7, "max-component-bytes": quota.to_string()}),
    );
    // Twelve uploads of different components at once, room for three.
    let barrier = Arc::new(Barrier::new(12));
    let uploads: Vec<_> = (0..12u8)
        .map(|i| {
            let (s, barrier, token, body) = (
                s.clone(),
                barrier.clone(),
                mallory.clone(),
                variant(&bytes, i),
            );
            std::thread::spawn(move || {
                barrier.wait();
                s.call(
                    "POST",
                    "/v1/components",
                    Some(&token),
                    Some(Body::Bytes(body)),
                )
                .0
            })
        })
        .collect();
    let codes: Vec<u16> = uploads.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 3, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 201 || *c == 403), "{codes:?}");
    let (_, list) = s.call("GET", "/v1/components", Some(&mallory), None);
    let stored: u64 = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["size"].as_u64().unwrap())
        .sum();
    assert!(
        stored <= quota,
        "{stored} bytes stored against a quota of {quota}"
    );
    // Twelve pipelines at once, room for seven.
    let id = list[0]["id"].as_str().unwrap();
    let spec = format!(
        "[[source]]\ntype = \"rate\"\nrows-per-second = 1\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n"
    );
    let barrier = Arc::new(Barrier::new(12));
    let puts: Vec<_> = (0..12)
        .map(|i| {
            let (s, barrier, token, spec) =
                (s.clone(), barrier.clone(), mallory.clone(), spec.clone());
            std::thread::spawn(move || {
                barrier.wait();
                put(&s, &token, &format!("p{i}"), &spec).0
            })
        })
        .collect();
    let codes: Vec<u16> = puts.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 7, "{codes:?}");
    let (_, list) = s.call("GET", "/v1/pipelines", Some(&mallory), None);
    assert_eq!(list.as_array().unwrap().len(), 7, "{list}");
}
