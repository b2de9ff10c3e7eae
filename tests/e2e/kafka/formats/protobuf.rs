//! Protobuf records written and read by protobuf's own Python runtime,
//! schemas registered as `PROTOBUF` in the real registry.

use serde_json::{Value, json};

use super::super::{broker, create_topic, unique};
use super::{
    get, hex, in_codecs_venv, produce_bytes, registry, unhex, uppercase_through_registry, values,
};

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
    uppercase_through_registry(
        work.path(),
        url,
        "protobuf",
        "order.proto",
        [&input, &output, &dead],
    );
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
