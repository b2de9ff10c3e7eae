//! Avro through pipelines with schema files by id (evolution mid-stream,
//! every bad input dead-lettered with its reason, outputs that do not fit),
//! and through the real registry to a Python guest.

use std::path::Path;

use serde_json::{Value, json};

use super::super::{broker, create_topic, unique};
use super::{get, hex, in_codecs_venv, produce_bytes, register, registry, unhex, values};
use crate::testkit::{guest, run_pipeline};

pub(super) const V1: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"item","type":"string"}]}"#;
pub(super) const V2: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"item","type":"string"},
  {"name":"qty","type":"int","default":1}]}"#;
/// A sink schema no output fits: `total` has no default and no record has it.
const TOTALS: &str = r#"{"type":"record","name":"Total","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"total","type":"double"}]}"#;

/// Framed Avro values, hex: each `[schema_id, schema, record]` of `items`
/// written by fastavro's schemaless writer behind Confluent's header.
pub(super) const WRITE: &str = r#"
import io, json, struct, sys
from fastavro import parse_schema, schemaless_writer
out = []
for sid, schema, record in json.load(sys.stdin):
    buf = io.BytesIO()
    buf.write(struct.pack(">bI", 0, sid))
    schemaless_writer(buf, parse_schema(json.loads(schema)), record)
    out.append(buf.getvalue().hex())
print(json.dumps(out))
"#;

/// Each hex value checked for Confluent's header and id, read by
/// fastavro's schemaless reader with the writer schema given.
pub(super) const READ: &str = r#"
import io, json, struct, sys
from fastavro import parse_schema, schemaless_reader
req = json.load(sys.stdin)
schema = parse_schema(json.loads(req["schema"]))
out = []
for h in req["values"]:
    b = bytes.fromhex(h)
    magic, sid = struct.unpack(">bI", b[:5])
    assert magic == 0 and sid == req["id"], (magic, sid)
    out.append(schemaless_reader(io.BytesIO(b[5:]), schema))
print(json.dumps(out))
"#;

fn pipeline(dir: &Path, input: &str, output: &str, dead: &str, sink_schema: &str) {
    let b = broker();
    let component = guest("json-enrich");
    std::fs::write(
        dir.join("p.toml"),
        format!(
            r#"checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
value-format = "avro"
value-schema = "v2.avsc"
[registry.schemas]
1 = "v1.avsc"
2 = "v2.avsc"
3 = "totals.avsc"
[transform]
component = "{}"
on-error = "dead-letter"
[transform.config]
uppercase = "item"
[sink.default]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{output}"
value-format = "avro"
value-schema = "{sink_schema}"
[sink.dead-letter]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{dead}"
[trigger]
type = "available-now"
"#,
            component.display()
        ),
    )
    .unwrap();
    for (name, text) in [("v1.avsc", V1), ("v2.avsc", V2), ("totals.avsc", TOTALS)] {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

#[test]
fn avro_written_by_fastavro_evolves_mid_stream_and_bad_records_are_dead_lettered() {
    let b = broker();
    let (input, output, dead) = (unique("avro-in"), unique("avro-out"), unique("avro-dead"));
    for t in [&input, &output, &dead] {
        create_topic(b, t, 1, &[]);
    }
    // Version 1 records, then version 2 (a field added with a default).
    let mut items = Vec::new();
    for i in 0..20 {
        items.push(json!([1, V1, {"id": i, "item": format!("pen {i}")}]));
    }
    for i in 20..40 {
        items.push(json!([2, V2, {"id": i, "item": format!("ink {i}"), "qty": i}]));
    }
    let mut framed: Vec<Vec<u8>> = serde_json::from_str::<Vec<String>>(&in_codecs_venv(
        WRITE,
        &Value::Array(items).to_string(),
    ))
    .unwrap()
    .iter()
    .map(|h| unhex(h))
    .collect();
    // Bad input: an unknown schema id, bytes that are not the record, no framing.
    let mut unknown = framed[0].clone();
    unknown[4] = 9;
    let mut truncated = framed[25].clone();
    truncated.truncate(7);
    framed.insert(5, unknown);
    framed.insert(30, truncated);
    framed.push(br#"{"id": 99, "item": "json"}"#.to_vec());
    produce_bytes(&input, &framed);

    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), &input, &output, &dead, "v2.avsc");
    let o = run_pipeline(dir.path(), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let out: Vec<String> = values(&output).iter().map(|v| hex(v)).collect();
    let read = in_codecs_venv(
        READ,
        &json!({"schema": V2, "id": 2, "values": out}).to_string(),
    );
    let got: Vec<Value> = serde_json::from_str(&read).unwrap();
    let mut expected: Vec<Value> = (0..20)
        .map(|i| json!({"id": i, "item": format!("PEN {i}"), "qty": 1}))
        .collect();
    expected.extend((20..40).map(|i| json!({"id": i, "item": format!("INK {i}"), "qty": i})));
    assert_eq!(got, expected);

    let letters: Vec<Value> = values(&dead)
        .iter()
        .map(|v| serde_json::from_slice(v).unwrap())
        .collect();
    let reasons: Vec<&str> = letters
        .iter()
        .map(|l| l["error"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons[0].contains("schema id 9 is not known"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("do not match Avro schema id 2"),
        "{reasons:?}"
    );
    assert!(reasons[2].contains("magic byte"), "{reasons:?}");
}

#[test]
fn outputs_that_do_not_fit_the_sink_schema_are_dead_lettered_naming_the_field() {
    let b = broker();
    let (input, output, dead) = (unique("avro-in"), unique("avro-out"), unique("avro-dead"));
    for t in [&input, &output, &dead] {
        create_topic(b, t, 1, &[]);
    }
    let items: Vec<Value> = (0..5)
        .map(|i| json!([1, V1, {"id": i, "item": "x"}]))
        .collect();
    let framed: Vec<Vec<u8>> = serde_json::from_str::<Vec<String>>(&in_codecs_venv(
        WRITE,
        &Value::Array(items).to_string(),
    ))
    .unwrap()
    .iter()
    .map(|h| unhex(h))
    .collect();
    produce_bytes(&input, &framed);
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), &input, &output, &dead, "totals.avsc");
    let o = run_pipeline(dir.path(), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(values(&output).is_empty());
    let letters = values(&dead);
    assert_eq!(letters.len(), 5);
    for l in letters {
        let l: Value = serde_json::from_slice(&l).unwrap();
        let m = l["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("sink.default") && m.contains("`item` is not in"),
            "{m}"
        );
    }
}

const PRICED: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"amount","type":"double"}]}"#;
/// PRICED and the flag the guest adds to big orders.
const FLAGGED: &str = r#"{"type":"record","name":"Flagged","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"amount","type":"double"},
  {"name":"big","type":"boolean","default":false}]}"#;

#[test]
fn avro_through_a_python_guest_comes_back_as_fastavro_expects() {
    let b = broker();
    let (input, output, dead) = (
        unique("avro-py-in"),
        unique("avro-py-out"),
        unique("avro-py-dead"),
    );
    for t in [&input, &output, &dead] {
        create_topic(b, t, 1, &[]);
    }
    let amounts: Vec<f64> = (0..30)
        .map(|i| [5.0, 50.0, 1500.0][i % 3] + i as f64)
        .collect();
    // Through the real registry: the producer registers its schema and
    // frames with that id; the sink registers its own on first use.
    let url = registry();
    let id = register(url, &format!("{input}-value"), PRICED);
    let items: Vec<Value> = amounts
        .iter()
        .enumerate()
        .map(|(i, a)| json!([id, PRICED, {"id": i, "amount": a}]))
        .collect();
    let framed: Vec<Vec<u8>> = serde_json::from_str::<Vec<String>>(&in_codecs_venv(
        WRITE,
        &Value::Array(items).to_string(),
    ))
    .unwrap()
    .iter()
    .map(|h| unhex(h))
    .collect();
    produce_bytes(&input, &framed);

    // examples/python/filter-and-flag, as a user builds it: drops amounts
    // under 10, splices `"big":true` into those of 1000 and more.
    let build = tempfile::tempdir().unwrap();
    let component = crate::testkit::scaffold(
        build.path(),
        "python",
        "flagger",
        Some("filter-and-flag/app.py"),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flagged.avsc"), FLAGGED).unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        format!(
            r#"checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
value-format = "avro"
[registry]
url = "{url}"
[transform]
component = "{}"
on-error = "dead-letter"
grants = ["wasi:sockets"]  # componentize-py's runtime imports it
[sink.default]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{output}"
value-format = "avro"
value-schema = "flagged.avsc"
[sink.dead-letter]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{dead}"
[trigger]
type = "available-now"
"#,
            component.display()
        ),
    )
    .unwrap();
    let o = run_pipeline(dir.path(), None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let out: Vec<String> = values(&output).iter().map(|v| hex(v)).collect();
    let out_id = get(&format!("{url}/subjects/{output}-value/versions/latest"))["id"]
        .as_u64()
        .unwrap();
    let read = in_codecs_venv(
        READ,
        &json!({"schema": FLAGGED, "id": out_id, "values": out}).to_string(),
    );
    let got: Vec<Value> = serde_json::from_str(&read).unwrap();
    let expected: Vec<Value> = amounts
        .iter()
        .enumerate()
        .filter(|(_, a)| **a >= 10.0)
        .map(|(i, a)| json!({"id": i, "amount": a, "big": *a >= 1000.0}))
        .collect();
    assert_eq!(got, expected);
    assert!(values(&dead).is_empty());
}
