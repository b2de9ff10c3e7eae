//! weir against a real schema registry (Apicurio Registry's Confluent API,
//! started by `scripts/schema-registry`): its client registering, looking
//! up and being refused, and a pipeline that reads records a registry-aware
//! producer framed, writes through a schema it registers, and waits out a
//! registry that stops answering without losing a record.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weir_formats::{FormatError, RegistryClient, SchemaKind, SchemaSource};

use super::avro::{READ, V1, V2, WRITE, hex, in_codecs_venv, produce_bytes, unhex, values};
use super::{broker, create_topic, unique};
use crate::testkit::{guest, repo_root, weir};

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

#[test]
fn the_registry_client_registers_looks_up_and_reports_incompatible_schemas() {
    let url = registry();
    let subject = format!("{}-value", unique("client"));
    let registering = RegistryClient::new(url, None, true, Duration::from_secs(10));
    let id = registering.id_for(&subject, SchemaKind::Avro, V1).unwrap();
    assert_eq!(
        registering.id_for(&subject, SchemaKind::Avro, V1).unwrap(),
        id,
        "registering the same schema again gives its id"
    );
    let back = registering.by_id(id).unwrap();
    assert_eq!(back.kind, SchemaKind::Avro);
    let json = |t: &str| serde_json::from_str::<Value>(t).unwrap();
    assert_eq!(
        json(&back.text),
        json(V1),
        "the same schema, however formatted"
    );
    assert!(matches!(
        registering.by_id(987_654),
        Err(FormatError::UnknownId(987_654, _))
    ));

    // Looking up only: the registered schema is found, another is refused.
    let looking = RegistryClient::new(url, None, false, Duration::from_secs(10));
    assert_eq!(looking.id_for(&subject, SchemaKind::Avro, V1).unwrap(), id);
    let err = looking
        .id_for(&subject, SchemaKind::Avro, V2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not registered under this subject"), "{err}");

    // Backward compatibility: a field added without a default is refused,
    // in one line naming the subject.
    ureq::put(format!("{url}/config/{subject}"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send_json(json!({ "compatibility": "BACKWARD" }))
        .unwrap();
    let no_default = V1.replace(
        r#"{"name":"item","type":"string"}"#,
        r#"{"name":"item","type":"string"},{"name":"colour","type":"string"}"#,
    );
    let err = registering
        .id_for(&subject, SchemaKind::Avro, &no_default)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&subject) && err.contains("HTTP 409") && !err.contains('\n'),
        "{err}"
    );
    // With a default it is compatible, and registered as a new version.
    let id2 = registering.id_for(&subject, SchemaKind::Avro, V2).unwrap();
    assert_ne!(id2, id);
}

#[test]
fn a_pipeline_reads_and_writes_through_the_registry_and_waits_out_a_stalled_one() {
    let dir = registry_dir("stalled");
    let url = start(&dir);
    let b = broker();
    let (input, output) = (unique("reg-in"), unique("reg-out"));
    for t in [&input, &output] {
        create_topic(b, t, 1, &[]);
    }
    // The producer registers its two versions and frames with their ids.
    let id1 = register(&url, &format!("{input}-value"), V1);
    let id2 = register(&url, &format!("{input}-value"), V2);
    let mut items = Vec::new();
    for i in 0..10 {
        items.push(json!([id1, V1, {"id": i, "item": format!("pen {i}")}]));
    }
    for i in 10..20 {
        items.push(json!([id2, V2, {"id": i, "item": format!("ink {i}"), "qty": 5}]));
    }
    let framed: Vec<Vec<u8>> = serde_json::from_str::<Vec<String>>(&in_codecs_venv(
        WRITE,
        &Value::Array(items).to_string(),
    ))
    .unwrap()
    .iter()
    .map(|h| unhex(h))
    .collect();
    produce_bytes(&input, &framed);

    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("v2.avsc"), V2).unwrap();
    std::fs::write(
        work.path().join("p.toml"),
        format!(
            r#"checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
value-format = "avro"
value-schema = "v2.avsc"
[registry]
url = "{url}"
timeout = "1s"
[transform]
component = "{}"
[transform.config]
uppercase = "item"
[sink.default]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{output}"
value-format = "avro"
value-schema = "v2.avsc"
[trigger]
type = "available-now"
"#,
            guest("json-enrich").display()
        ),
    )
    .unwrap();

    // The registry stops answering (its process stopped, its port still
    // open) before the pipeline starts; weir waits for it.
    let pid = std::fs::read_to_string(dir.join("registry.pid")).unwrap();
    let signal = |s: &str| {
        assert!(
            Command::new("kill")
                .args([s, pid.trim()])
                .status()
                .unwrap()
                .success()
        );
    };
    signal("-STOP");
    let mut run = weir()
        .arg("run")
        .arg(work.path().join("p.toml"))
        .args(["--progress", "none"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = run.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("unavailable") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let waited = rx.recv_timeout(Duration::from_secs(60));
    signal("-CONT");
    assert!(
        waited.is_ok(),
        "weir never reported the registry unavailable"
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = run.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "weir run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = reader.join().unwrap();
    assert!(status.success(), "{log}");

    // Every record, in order, under the id the sink registered.
    let latest = get(&format!("{url}/subjects/{output}-value/versions/latest"));
    let out_id = latest["id"].as_u64().unwrap();
    let schema = get(&format!("{url}/schemas/ids/{out_id}"))["schema"]
        .as_str()
        .unwrap()
        .to_string();
    let out: Vec<String> = values(&output).iter().map(|v| hex(v)).collect();
    let read = in_codecs_venv(
        READ,
        &json!({"schema": schema, "id": out_id, "values": out}).to_string(),
    );
    let got: Vec<Value> = serde_json::from_str(&read).unwrap();
    let mut expected: Vec<Value> = (0..10)
        .map(|i| json!({"id": i, "item": format!("PEN {i}"), "qty": 1}))
        .collect();
    expected.extend((10..20).map(|i| json!({"id": i, "item": format!("INK {i}"), "qty": 5})));
    assert_eq!(got, expected);
    script().arg("stop").arg(&dir).status().unwrap();
}

const ORDER_JSON_SCHEMA: &str = r#"{"title":"Order","type":"object","properties":{
  "id":{"type":"integer"},"item":{"type":"string","maxLength":10}},
  "required":["id","item"],"additionalProperties":false}"#;

#[test]
fn json_schema_records_are_checked_in_and_out_through_the_registry() {
    let url = registry();
    let b = broker();
    let (input, output, dead) = (unique("js-in"), unique("js-out"), unique("js-dead"));
    for t in [&input, &output, &dead] {
        create_topic(b, t, 1, &[]);
    }
    let mut r = ureq::post(format!("{url}/subjects/{input}-value/versions"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send_json(json!({ "schema": ORDER_JSON_SCHEMA, "schemaType": "JSON" }))
        .unwrap();
    let id = r.body_mut().read_json::<Value>().unwrap()["id"]
        .as_u64()
        .unwrap() as u32;
    let frame = |json: &str| {
        let mut v = vec![0];
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(json.as_bytes());
        v
    };
    let mut values_in: Vec<Vec<u8>> = (0..10)
        .map(|i| frame(&json!({"id": i, "item": format!("pen {i}")}).to_string()))
        .collect();
    // Breaks the schema (too long), and a value that is not JSON.
    values_in.insert(3, frame(r#"{"id": 99, "item": "a very long item"}"#));
    values_in.push(frame("{not json"));
    produce_bytes(&input, &values_in);

    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("order.json"), ORDER_JSON_SCHEMA).unwrap();
    std::fs::write(
        work.path().join("p.toml"),
        format!(
            r#"checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
value-format = "json-schema"
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
value-format = "json-schema"
value-schema = "order.json"
[sink.dead-letter]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{dead}"
[trigger]
type = "available-now"
"#,
            guest("json-enrich").display()
        ),
    )
    .unwrap();
    let o = crate::testkit::run_pipeline(work.path(), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let out_id = get(&format!("{url}/subjects/{output}-value/versions/latest"))["id"]
        .as_u64()
        .unwrap() as u32;
    let got: Vec<Value> = values(&output)
        .iter()
        .map(|v| {
            assert_eq!(v[0], 0);
            assert_eq!(u32::from_be_bytes([v[1], v[2], v[3], v[4]]), out_id);
            serde_json::from_slice(&v[5..]).unwrap()
        })
        .collect();
    let expected: Vec<Value> = (0..10)
        .map(|i| json!({"id": i, "item": format!("PEN {i}")}))
        .collect();
    assert_eq!(got, expected);
    let reasons: Vec<String> = values(&dead)
        .iter()
        .map(|l| serde_json::from_slice::<Value>(l).unwrap()["error"]["message"].to_string())
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].contains("field `/item`"), "{reasons:?}");
    assert!(reasons[1].contains("is not JSON"), "{reasons:?}");
}

const ORDER_PROTO: &str = r#"syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string item = 2;
  int32 qty = 3;
}
"#;

/// Protobuf's own Python runtime, with `order.proto` compiled by protoc
/// (grpcio-tools): writes framed values (message indexes `[0]`) for
/// `{"id", "item", "qty"}` inputs, or reads framed values back to them.
const PROTO_PY: &str = r#"
import json, struct, subprocess, sys, tempfile, os
req = json.load(sys.stdin)
d = tempfile.mkdtemp()
open(os.path.join(d, "order.proto"), "w").write(req["proto"])
from grpc_tools import protoc
assert protoc.main(["protoc", "-I" + d, "--python_out=" + d, os.path.join(d, "order.proto")]) == 0
sys.path.insert(0, d)
import order_pb2
if req["op"] == "write":
    out = []
    for r in req["records"]:
        m = order_pb2.Order(**r)
        out.append((struct.pack(">bI", 0, req["id"]) + b"\0" + m.SerializeToString()).hex())
    print(json.dumps(out))
else:
    out = []
    for h in req["values"]:
        b = bytes.fromhex(h)
        magic, sid = struct.unpack(">bI", b[:5])
        assert magic == 0 and sid == req["id"] and b[5] == 0, (magic, sid, b[5])
        m = order_pb2.Order.FromString(b[6:])
        out.append({"id": m.id, "item": m.item, "qty": m.qty})
    print(json.dumps(out))
"#;

#[test]
fn protobuf_records_written_and_read_by_protobufs_runtime_pass_through_the_registry() {
    let url = registry();
    let b = broker();
    let (input, output, dead) = (unique("pb-in"), unique("pb-out"), unique("pb-dead"));
    for t in [&input, &output, &dead] {
        create_topic(b, t, 1, &[]);
    }
    let mut r = ureq::post(format!("{url}/subjects/{input}-value/versions"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send_json(json!({ "schema": ORDER_PROTO, "schemaType": "PROTOBUF" }))
        .unwrap();
    let id = r.body_mut().read_json::<Value>().unwrap()["id"]
        .as_u64()
        .unwrap();
    let records: Vec<Value> = (0..12)
        .map(|i| json!({"id": i, "item": format!("pen {i}"), "qty": i % 4}))
        .collect();
    let written = in_codecs_venv(
        PROTO_PY,
        &json!({"op": "write", "proto": ORDER_PROTO, "id": id, "records": records}).to_string(),
    );
    let mut framed: Vec<Vec<u8>> = serde_json::from_str::<Vec<String>>(&written)
        .unwrap()
        .iter()
        .map(|h| unhex(h))
        .collect();
    // Bytes that end inside a field.
    let mut cut = framed[4].clone();
    cut.truncate(cut.len() - 2);
    framed.insert(4, cut);
    produce_bytes(&input, &framed);

    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("order.proto"), ORDER_PROTO).unwrap();
    std::fs::write(
        work.path().join("p.toml"),
        format!(
            r#"checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
value-format = "protobuf"
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
value-format = "protobuf"
value-schema = "order.proto"
[sink.dead-letter]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{dead}"
[trigger]
type = "available-now"
"#,
            guest("json-enrich").display()
        ),
    )
    .unwrap();
    let o = crate::testkit::run_pipeline(work.path(), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let out_id = get(&format!("{url}/subjects/{output}-value/versions/latest"))["id"]
        .as_u64()
        .unwrap();
    let out: Vec<String> = values(&output).iter().map(|v| hex(v)).collect();
    let read = in_codecs_venv(
        PROTO_PY,
        &json!({"op": "read", "proto": ORDER_PROTO, "id": out_id, "values": out}).to_string(),
    );
    let got: Vec<Value> = serde_json::from_str(&read).unwrap();
    let expected: Vec<Value> = (0..12)
        .map(|i| json!({"id": i, "item": format!("PEN {i}"), "qty": i % 4}))
        .collect();
    assert_eq!(got, expected);
    let reasons: Vec<String> = values(&dead)
        .iter()
        .map(|l| serde_json::from_slice::<Value>(l).unwrap()["error"]["message"].to_string())
        .collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].contains("do not match protobuf message shop.Order"),
        "{reasons:?}"
    );
}
