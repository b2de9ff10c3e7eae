//! A local S3-compatible server (moto, via `scripts/s3-server`) for the
//! object-store checkpoint tests: one per test process, started on first
//! use and killed when the process exits; each test makes its own bucket.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

static CHILD: Mutex<Option<Child>> = Mutex::new(None);

extern "C" fn kill_server() {
    if let Ok(mut c) = CHILD.lock()
        && let Some(c) = c.as_mut()
    {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The server's endpoint, `http://127.0.0.1:PORT`.
pub fn s3_endpoint() -> &'static str {
    static ENDPOINT: OnceLock<String> = OnceLock::new();
    ENDPOINT.get_or_init(|| {
        let mut child = Command::new(crate::repo_root().join("scripts/s3-server"))
            .arg("run")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running scripts/s3-server");
        let stderr = child.stderr.take().expect("piped");
        *CHILD.lock().unwrap() = Some(child);
        // SAFETY: registering a plain extern "C" function with libc.
        unsafe { libc::atexit(kill_server) };
        let mut lines = BufReader::new(stderr).lines();
        let mut seen = Vec::new();
        let endpoint = loop {
            let Some(Ok(line)) = lines.next() else {
                panic!("s3-server exited before it was ready:\n{}", seen.join("\n"));
            };
            if let Some(url) = line.split("Running on ").nth(1) {
                break url.trim().to_string();
            }
            seen.push(line);
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        endpoint
    })
}

/// A new empty bucket on the server (unsigned `PUT /bucket`: moto accepts
/// it), named after `prefix`.
pub fn s3_bucket(prefix: &str) -> String {
    let endpoint = s3_endpoint();
    let name = format!("{prefix}-{}", unique_suffix()).to_lowercase();
    let addr = endpoint.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).expect("connecting to the S3 server");
    write!(
        conn,
        "PUT /{name} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "creating bucket {name}: {reply}"
    );
    name
}

/// The keys in `bucket` under `prefix` (an unsigned list, which moto
/// accepts), at most the first 1,000.
pub fn s3_keys(bucket: &str, prefix: &str) -> Vec<String> {
    let endpoint = s3_endpoint();
    let addr = endpoint.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).expect("connecting to the S3 server");
    write!(
        conn,
        "GET /{bucket}?prefix={prefix} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "listing {bucket}: {reply}"
    );
    reply
        .split("<Key>")
        .skip(1)
        .filter_map(|k| k.split('<').next())
        .map(str::to_string)
        .collect()
}

/// The settings a client of the server needs, as `object_store` option
/// names (and, upper-cased, the environment variables `weir run` reads).
pub fn s3_options() -> Vec<(&'static str, String)> {
    vec![
        ("aws_endpoint", s3_endpoint().to_string()),
        ("aws_allow_http", "true".into()),
        ("aws_access_key_id", "test".into()),
        ("aws_secret_access_key", "test".into()),
        ("aws_region", "us-east-1".into()),
    ]
}

/// Environment variables for a `weir` child process using the server.
pub fn s3_env() -> Vec<(String, String)> {
    s3_options()
        .into_iter()
        .map(|(k, v)| (k.to_uppercase(), v))
        .collect()
}

/// Unique within this machine: the pid, a counter and the clock.
fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}-{:x}", std::process::id(), nanos & 0xff_ffff)
}
