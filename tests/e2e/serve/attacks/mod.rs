//! Attacks on `weir serve`'s tenancy, each performed through the real HTTP
//! API against a spawned server by one tenant (`mallory`) while another
//! (`alice`) runs a pipeline: every attack must fail with a clear 4xx, and
//! alice's data, quotas and pipeline must be untouched.

pub(crate) mod edge;
mod env;
mod flood;
mod kernel;
mod lifecycle;
mod metrics;
mod numbers;
mod paths;
mod property;
mod quotas;
mod stopping;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::pipelines::{append_values, put};
use super::{Body, Server};

/// A victim tenant with a running pipeline that has committed its first
/// 100 records.
pub(crate) struct Victim {
    pub token: String,
    pub log: PathBuf,
    pub root: PathBuf,
    sent: usize,
}

impl Victim {
    pub fn start(s: &Server, data: &Path) -> Victim {
        let token = s.tenant("alice");
        let id = s.upload(&token, "uppercase");
        let root = data.join("tenants/alice");
        let log = root.join("log");
        let mut v = Victim {
            token,
            log,
            root,
            sent: 0,
        };
        v.send(100);
        let (st, body) = put(
            s,
            &v.token,
            "copy",
            &super::pipelines::PIPELINE.replace("COMPONENT", &id),
        );
        assert_eq!(st, 201, "{body}");
        v.assert_flowing();
        v
    }

    /// Append `n` more records.
    pub fn send(&mut self, n: usize) {
        let values: Vec<String> = (self.sent..self.sent + n)
            .map(|i| format!("a{i:06}"))
            .collect();
        append_values(&self.log, &values);
        self.sent += n;
    }

    /// Her input topic holds exactly what she sent.
    pub fn assert_input_untouched(&self) {
        let mut got = crate::testkit::topic_values(&self.log, "in").unwrap_or_default();
        got.sort();
        let want: Vec<String> = (0..self.sent).map(|i| format!("a{i:06}")).collect();
        assert_eq!(got, want, "alice's input changed");
    }

    /// Every record sent so far reaches the output, uppercased, exactly once
    /// (within 30 s).
    pub fn assert_flowing(&self) {
        let want: Vec<String> = (0..self.sent).map(|i| format!("A{i:06}")).collect();
        let started = Instant::now();
        loop {
            let mut got = crate::testkit::topic_values(&self.log, "out").unwrap_or_default();
            got.sort();
            if got == want {
                return;
            }
            assert!(
                got.len() <= want.len() && started.elapsed() < Duration::from_secs(30),
                "alice's output: {} records, {} expected",
                got.len(),
                want.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A tenant with quotas and allow-lists given as JSON, e.g.
/// `{"max-pipelines": 3}`; its token.
pub(crate) fn tenant_with(s: &Server, name: &str, extra: Value) -> String {
    let mut body = json!({ "name": name });
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(body)),
    );
    assert_eq!(st, 201, "{v}");
    v["token"].as_str().unwrap().to_string()
}

/// A refusal: `status` with the API's JSON error whose detail holds
/// `needle`, and no server path in it.
pub(crate) fn assert_refused(got: (u16, Value), status: u16, needle: &str, data: &Path) {
    let (st, v) = got;
    assert_eq!(st, status, "{v}");
    let detail = v["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("not an API error: {v}"));
    assert!(v["error"].is_string(), "{v}");
    assert!(detail.contains(needle), "`{needle}` not in: {detail}");
    assert!(
        !detail.contains(&data.display().to_string()),
        "a server path in: {detail}"
    );
}

/// The server process's resident memory, in KiB.
pub(crate) fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}
