use std::collections::BTreeMap;

use super::*;
use crate::FileSchemas;

const ORDER: &str = r#"syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string item = 2;
  int32 qty = 3;
  message Line { string sku = 1; }
  repeated Line lines = 4;
}
message Other { string x = 1; }
"#;

fn source(dir: &tempfile::TempDir) -> Arc<FileSchemas> {
    let path = dir.path().join("order.proto");
    std::fs::write(&path, ORDER).unwrap();
    Arc::new(FileSchemas::read(&BTreeMap::from([(7u32, path)])).unwrap())
}

#[test]
fn message_indexes_read_as_confluent_writes_them() {
    assert_eq!(indexes(&[0, 9]).unwrap(), (vec![0], &[9u8][..]));
    // Count 2 (zigzag 4), then 1 (2) and 0 (0): the first nested message of the second.
    assert_eq!(indexes(&[4, 2, 0, 9]).unwrap(), (vec![1, 0], &[9u8][..]));
    assert!(indexes(&[0x80]).is_err());
    assert!(indexes(&[3]).is_err(), "a negative count");
}

#[test]
fn outputs_round_trip_and_faults_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let s = source(&dir);
    let e = ProtobufEncoder::new(s.as_ref(), "t-value", ORDER).unwrap();
    assert_eq!(e.schema_id(), 7);
    assert_eq!(ProtobufEncoder::record_name(ORDER).unwrap(), "shop.Order");
    let mut framed = Vec::new();
    e.encode(
        br#"{"id": 5, "item": "pen", "lines": [{"sku": "a"}]}"#,
        &mut framed,
    )
    .unwrap();
    assert_eq!(&framed[..6], &[0, 0, 0, 0, 7, 0]);
    let mut d = ProtobufDecoder::new(s.clone());
    let mut out = Vec::new();
    d.decode(&framed, &mut out).unwrap().unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out).unwrap(),
        serde_json::json!({"id": 5, "item": "pen", "qty": 0, "lines": [{"sku": "a"}]})
    );
    let fault = |j: &str| e.encode(j.as_bytes(), &mut Vec::new()).unwrap_err().0;
    assert!(fault(r#"{"id": 1, "colour": "red"}"#).contains("colour"));
    assert!(fault(r#"{"id": "x"}"#).contains("shop.Order"));
    // Not the message its bytes claim: a truncated field.
    let mut bad = framed.clone();
    bad.truncate(bad.len() - 1);
    let f = d.decode(&bad, &mut Vec::new()).unwrap().unwrap_err().0;
    assert!(
        f.contains("do not match protobuf message shop.Order"),
        "{f}"
    );
}

#[test]
fn a_proto_imports_only_the_well_known_types() {
    let wkt = "syntax = \"proto3\";\nimport \"google/protobuf/timestamp.proto\";\nmessage A { google.protobuf.Timestamp at = 1; }\n";
    assert!(compile(wkt, "schema").is_ok());
    for import in ["other.proto", "/etc/passwd", "../../etc/passwd"] {
        let text =
            format!("syntax = \"proto3\";\nimport \"{import}\";\nmessage A {{ int32 x = 1; }}\n");
        let err = compile(&text, "schema").unwrap_err();
        assert!(err.contains("not a .proto file weir can compile"), "{err}");
    }
}
