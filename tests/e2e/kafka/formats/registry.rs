//! weir's registry client against the real registry, and a pipeline that
//! reads records a registry-aware producer framed, registers its sink's
//! schema, and waits out a registry that stops answering without losing a
//! record.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use weir_formats::{FormatError, RegistryClient, SchemaKind, SchemaSource};

use super::super::{broker, create_topic, unique};
use super::avro::{READ, V1, V2, WRITE};
use super::{
    get, hex, in_codecs_venv, produce_bytes, register, registry, registry_dir, script, start,
    unhex, values,
};
use crate::testkit::{guest, weir};

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
    // The registry's own account names the field (Apicurio: "colour at /fields/2").
    assert!(
        err.contains(&subject)
            && err.contains("HTTP 409")
            && err.contains("colour")
            && !err.contains('\n'),
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
    let (ended_tx, ended) = std::sync::mpsc::channel();
    let stderr = run.stderr.take().unwrap();
    // Its stderr ends when weir exits: the whole log is that event.
    std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("unavailable") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        let _ = ended_tx.send(all);
    });
    let waited = rx.recv_timeout(Duration::from_secs(60));
    signal("-CONT");
    assert!(
        waited.is_ok(),
        "weir never reported the registry unavailable"
    );
    let log = ended
        .recv_timeout(Duration::from_secs(120))
        .expect("weir run did not finish");
    let status = run.wait().unwrap();
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
