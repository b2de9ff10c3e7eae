use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::FileSchemas;

const V1: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
    {"name":"id","type":"long"},{"name":"item","type":"string"}]}"#;
const V2: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[
    {"name":"id","type":"long"},{"name":"item","type":"string"},
    {"name":"qty","type":"int","default":1},
    {"name":"note","type":["null","string"],"default":null}]}"#;

fn schemas(dir: &tempfile::TempDir) -> Arc<FileSchemas> {
    let mut files = BTreeMap::new();
    for (id, text) in [(1u32, V1), (2, V2)] {
        let p: PathBuf = dir.path().join(format!("v{id}.avsc"));
        std::fs::write(&p, text).unwrap();
        files.insert(id, p);
    }
    Arc::new(FileSchemas::read(&files).unwrap())
}

/// Framed bytes written by apache-avro's own writer (not by this module).
fn written(id: u32, schema: &str, fields: Vec<(&str, AvroValue)>) -> Vec<u8> {
    let schema = Schema::parse_str(schema).unwrap();
    let record = AvroValue::Record(fields.into_iter().map(|(k, v)| (k.into(), v)).collect());
    let mut out = Vec::new();
    frame_header(id, &mut out);
    GenericDatumWriter::builder(&schema)
        .build()
        .unwrap()
        .write_value(&mut out, record)
        .unwrap();
    out
}

fn decode(d: &mut AvroDecoder, v: &[u8]) -> Result<JsonValue, RecordFault> {
    let mut out = Vec::new();
    d.decode(v, &mut out).unwrap()?;
    Ok(serde_json::from_slice(&out).unwrap())
}

#[test]
fn records_of_either_version_read_as_the_reader_schema() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = AvroDecoder::new(schemas(&dir), Some(V2)).unwrap();
    let old = written(
        1,
        V1,
        vec![
            ("id", AvroValue::Long(7)),
            ("item", AvroValue::String("pen".into())),
        ],
    );
    assert_eq!(
        decode(&mut d, &old).unwrap(),
        serde_json::json!({"id": 7, "item": "pen", "qty": 1, "note": null})
    );
    let new = written(
        2,
        V2,
        vec![
            ("id", AvroValue::Long(8)),
            ("item", AvroValue::String("ink".into())),
            ("qty", AvroValue::Int(3)),
            (
                "note",
                AvroValue::Union(1, Box::new(AvroValue::String("blue".into()))),
            ),
        ],
    );
    assert_eq!(
        decode(&mut d, &new).unwrap(),
        serde_json::json!({"id": 8, "item": "ink", "qty": 3, "note": "blue"})
    );
}

#[test]
fn unknown_ids_foreign_bytes_and_garbage_are_faults_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = AvroDecoder::new(schemas(&dir), None).unwrap();
    let mut unknown = vec![0, 0, 0, 0, 9];
    unknown.extend_from_slice(&[2, 2, b'a']);
    assert!(
        decode(&mut d, &unknown)
            .unwrap_err()
            .0
            .contains("schema id 9 is not known")
    );
    assert!(
        decode(&mut d, b"{\"id\":1}")
            .unwrap_err()
            .0
            .contains("magic byte")
    );
    // id 1 framing around bytes that end inside the record.
    let truncated = [0, 0, 0, 0, 1, 14];
    assert!(
        decode(&mut d, &truncated)
            .unwrap_err()
            .0
            .contains("do not match Avro schema id 1")
    );
    // A whole record and then more bytes.
    let mut long = written(
        1,
        V1,
        vec![
            ("id", AvroValue::Long(1)),
            ("item", AvroValue::String("x".into())),
        ],
    );
    long.push(0);
    assert!(
        decode(&mut d, &long)
            .unwrap_err()
            .0
            .contains("1 bytes left")
    );
}

#[test]
fn outputs_encode_against_the_sink_schema_or_name_the_field_that_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let s = schemas(&dir);
    let e = AvroEncoder::new(s.as_ref(), "orders-value", V2).unwrap();
    assert_eq!(e.schema_id(), 2);
    let mut out = Vec::new();
    e.encode(br#"{"id": 5, "item": "cap", "note": "red"}"#, &mut out)
        .unwrap();
    let framed = unframe(&out).unwrap();
    assert_eq!(framed.schema_id, 2);
    let schema = Schema::parse_str(V2).unwrap();
    let back = GenericDatumReader::builder(&schema)
        .build()
        .unwrap()
        .read_value(&mut { framed.payload })
        .unwrap();
    assert_eq!(
        JsonValue::try_from(back).unwrap(),
        serde_json::json!({"id": 5, "item": "cap", "qty": 1, "note": "red"})
    );
    let fault = |json: &str| e.encode(json.as_bytes(), &mut Vec::new()).unwrap_err().0;
    assert!(
        fault(r#"{"item": "cap"}"#).contains("field `id` is missing"),
        "{}",
        fault(r#"{"item": "cap"}"#)
    );
    assert!(fault(r#"{"id": "x", "item": "cap"}"#).contains("field `id`"));
    assert!(fault(r#"{"id": 1, "item": "cap", "colour": 1}"#).contains("field `colour` is not in"));
    assert!(fault("not json").contains("not JSON"));
}

#[test]
fn a_sink_schema_not_listed_by_id_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let s = schemas(&dir);
    let other = r#"{"type":"record","name":"Other","fields":[{"name":"a","type":"int"}]}"#;
    let err = AvroEncoder::new(s.as_ref(), "t-value", other)
        .err()
        .unwrap();
    assert!(err.to_string().contains("not listed"), "{err}");
}
