//! JSON Schema records checked on the way in and out, schemas registered
//! as `JSON` in the real registry.

use serde_json::{Value, json};

use super::super::{broker, create_topic, unique};
use super::{get, produce_bytes, registry, uppercase_through_registry, values};

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
    uppercase_through_registry(
        work.path(),
        url,
        "json-schema",
        "order.json",
        [&input, &output, &dead],
    );
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
