//! Records with schemas end to end against the real broker: values written
//! and read by the ecosystem's own libraries (fastavro, protobuf's Python
//! runtime; never weir's own encoder on both sides), schemas from files by
//! id or from a real registry (Apicurio Registry's Confluent API, started by
//! `scripts/schema-registry`).

mod avro;
mod json_schema;
mod protobuf;
mod registry;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{Value, json};

use super::broker;
use crate::testkit::repo_root;

/// Run `script` in the venv of the ecosystem's codecs (fastavro, protobuf)
/// with `input` on stdin; its stdout.
fn in_codecs_venv(script: &str, input: &str) -> String {
    let python = Command::new(repo_root().join("scripts/ecosystem-codecs"))
        .arg("python")
        .output()
        .expect("scripts/ecosystem-codecs");
    assert!(
        python.status.success(),
        "{}",
        String::from_utf8_lossy(&python.stderr)
    );
    let python = String::from_utf8(python.stdout).unwrap();
    let mut child = Command::new(python.trim())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "codec script failed");
    String::from_utf8(out.stdout).unwrap()
}

/// Produce `values` to `topic`, keys `k0`, `k1`... in order.
fn produce_bytes(topic: &str, values: &[Vec<u8>]) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", broker())
        .create()
        .unwrap();
    for (i, v) in values.iter().enumerate() {
        let key = format!("k{i}");
        p.send(
            BaseRecord::<[u8], [u8]>::to(topic)
                .key(key.as_bytes())
                .payload(v),
        )
        .map_err(|(e, _)| e)
        .unwrap();
    }
    p.flush(Duration::from_secs(30)).unwrap();
}

/// Every value of a 1-partition topic, read committed.
fn values(topic: &str) -> Vec<Vec<u8>> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker())
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .set("group.id", "weir-test-avro")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "reading {topic} timed out");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => out.push(m.payload().unwrap_or_default().to_vec()),
            Some(Err(KafkaError::PartitionEOF(_))) => return out,
            Some(Err(e)) => panic!("{e}"),
            None => {}
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

static STARTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

extern "C" fn stop_registries() {
    if let Ok(dirs) = STARTED.lock() {
        for d in dirs.iter() {
            let _ = script().arg("stop").arg(d).status();
        }
    }
}

fn script() -> Command {
    Command::new(repo_root().join("scripts/schema-registry"))
}

/// Start a registry in `dir`; its API base URL. Stopped at process exit.
fn start(dir: &Path) -> String {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering a plain extern "C" function with libc.
    REGISTER.call_once(|| unsafe {
        libc::atexit(stop_registries);
    });
    let out = script().arg("start").arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "schema-registry start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    STARTED.lock().unwrap().push(dir.to_path_buf());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn registry_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("registry-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The registry the tests that do not stop it share.
fn registry() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| start(&registry_dir("shared")))
}

/// Register `schema` under `subject` as a producer's serializer would.
fn register(url: &str, subject: &str, schema: &str) -> u32 {
    let mut r = ureq::post(format!("{url}/subjects/{subject}/versions"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send_json(json!({ "schema": schema }))
        .unwrap();
    r.body_mut().read_json::<Value>().unwrap()["id"]
        .as_u64()
        .unwrap() as u32
}

fn get(url: &str) -> Value {
    ureq::get(url)
        .call()
        .unwrap()
        .body_mut()
        .read_json()
        .unwrap()
}

/// `dir/p.toml`: Kafka `[input, output, dead]`: `input` in `format` ->
/// json-enrich uppercasing `item` -> `output` in `format`, written with
/// `schema` (a file in `dir`); bad records to `dead`; schemas from the
/// registry at `url`.
fn uppercase_through_registry(
    dir: &Path,
    url: &str,
    format: &str,
    schema: &str,
    topics: [&str; 3],
) {
    let [input, output, dead] = topics;
    let b = broker();
    std::fs::write(
        dir.join("p.toml"),
        format!(
            r#"checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
value-format = "{format}"
[registry]
url = "{url}"
[transform]
component = "{}"
on-error = "dead-letter"
[transform.config]
uppercase = "item"
[sink.default]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{output}"
value-format = "{format}"
value-schema = "{schema}"
[sink.dead-letter]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{dead}"
[trigger]
type = "available-now"
"#,
            crate::testkit::guest("json-enrich").display()
        ),
    )
    .unwrap();
}
