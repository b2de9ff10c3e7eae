//! Attack 7: slowloris, half-open connections that never finish their
//! headers, from a client that never authenticates; and the edge's other
//! promises: every error is the API's JSON, every body has a limit.

use std::time::{Duration, Instant};

use std::io::{Read, Write};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Victim;
use crate::serve::Server;

pub(crate) fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Connections from another client address (127.0.0.2), each sending
/// half a request's headers and nothing more.
pub(crate) struct HalfOpen {
    rt: tokio::runtime::Runtime,
    held: Vec<tokio::net::TcpStream>,
}

impl HalfOpen {
    /// Open `n` of them to `s` (those it refuses at once are not held).
    pub(crate) fn open(s: &Server, n: usize) -> HalfOpen {
        let addr: std::net::SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let held = rt.block_on(async {
            let mut held = Vec::new();
            for _ in 0..n {
                let sock = tokio::net::TcpSocket::new_v4().unwrap();
                sock.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                if let Ok(mut c) = sock.connect(addr).await {
                    let _ = c.write_all(b"GET /v1/whoami HTTP/1.1\r\nHost: x\r\n").await;
                    held.push(c);
                }
            }
            held
        });
        HalfOpen { rt, held }
    }

    /// Each is closed by the server within `limit` (its headers are late).
    pub(crate) fn all_closed_within(mut self, limit: Duration) {
        self.rt.block_on(async {
            for c in &mut self.held {
                let mut buf = Vec::new();
                let r = tokio::time::timeout(limit, c.read_to_end(&mut buf)).await;
                assert!(
                    r.is_ok(),
                    "a half-open connection was still held after {limit:?}"
                );
            }
        });
    }
}

/// The 99th percentile of `n` timed GETs of `path` by `token`, each
/// answered 200.
pub(crate) fn p99_of_gets(s: &Server, token: &str, path: &str, n: usize) -> Duration {
    let mut took: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let (st, v) = s.call("GET", path, Some(token), None);
            assert_eq!(st, 200, "GET {path}: {v}");
            t.elapsed()
        })
        .collect();
    took.sort();
    took[(took.len() * 99 / 100).min(took.len() - 1)]
}

#[test]
fn half_open_connections_neither_exhaust_descriptors_nor_slow_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(
        &data,
        &[
            "--max-connections-per-client",
            "32",
            "--header-timeout",
            "2s",
        ],
    );
    let mut alice = Victim::start(&s, &data);
    let fds_before = open_fds(s.pid());
    let attackers = HalfOpen::open(&s, 300);
    // Meanwhile the API answers alice quickly...
    let p99 = p99_of_gets(&s, &alice.token, "/v1/pipelines/copy", 50);
    assert!(
        p99 < Duration::from_millis(50),
        "API p99 {p99:?} under attack"
    );
    // ...the server holds at most its per-client share of them...
    let fds = open_fds(s.pid());
    assert!(
        fds <= fds_before + 40,
        "{fds} descriptors open, {fds_before} before"
    );
    // ...her pipeline goes on...
    alice.send(100);
    alice.assert_flowing();
    // ...and those it holds are closed once their headers are late.
    attackers.all_closed_within(Duration::from_secs(8));
}

fn raw(s: &Server, method: &str, path: &str, token: &str, body: Vec<u8>) -> (u16, Value) {
    let url = format!("{}{path}", s.base);
    let auth = format!("Bearer {token}");
    let mut r = match method {
        "PUT" => s
            .http
            .put(&url)
            .header("Authorization", &auth)
            .send(&body[..]),
        "PATCH" => s
            .http
            .patch(&url)
            .header("Authorization", &auth)
            .send(&body[..]),
        _ => s.http.get(&url).header("Authorization", &auth).call(),
    }
    .unwrap();
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Malformed requests get the API's JSON error, and a body over the limit
/// is refused once the limit is read.
pub(crate) fn refusals_are_json_and_bodies_bounded(s: &Server, t: &str) {
    for (method, path, body, status) in [
        ("PATCH", "/v1/pipelines/x", b"x".to_vec(), 405),
        ("PUT", "/v1/pipelines/x?bogus=1", b"x".to_vec(), 400),
        ("GET", "/v1/pipelines/x/dead-letters?limit=abc", vec![], 400),
        ("PUT", "/v1/pipelines/x", vec![0xff, 0xfe, 0x00], 400),
    ] {
        let (st, v) = raw(s, method, path, t, body);
        assert_eq!(st, status, "{method} {path}: {v}");
        assert!(
            v["error"].is_string() && v["detail"].is_string(),
            "{method} {path}: not the API's JSON error: {v}"
        );
    }
    let mut c = std::net::TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    let mut writer = c.try_clone().unwrap();
    let header = format!(
        "PUT /v1/pipelines/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {t}\r\nContent-Length: {}\r\n\r\n",
        2 << 20
    );
    std::thread::spawn(move || {
        let _ = writer.write_all(header.as_bytes());
        let _ = writer.write_all(&vec![b'#'; 2 << 20]);
    });
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = [0u8; 4096];
    let n = c.read(&mut head).unwrap();
    let text = String::from_utf8_lossy(&head[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"error\":\"too-large\""), "{text}");
}

#[test]
fn every_refusal_is_json_and_every_body_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &["--request-timeout", "1s"]);
    let t = s.tenant("mallory");
    refusals_are_json_and_bodies_bounded(&s, &t);
    let mut head = [0u8; 4096];
    // A body that trickles in (slowloris after the headers) times out.
    let mut c = std::net::TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    write!(
        c,
        "PUT /v1/pipelines/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {t}\r\nContent-Length: 100\r\n\r\n0123456789"
    )
    .unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let n = c.read(&mut head).unwrap();
    let text = String::from_utf8_lossy(&head[..n]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
}
