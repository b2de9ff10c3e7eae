//! JSON Schema values with Confluent framing: the payload is JSON text,
//! checked against the schema its id names before the guest sees it, and
//! outputs checked against the sink's schema before they are written.
//! Schemas resolve no remote `$ref`s (the crate's network and file
//! resolvers are not built in), so a schema cannot make weir fetch anything.

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::Value;

use crate::by_id::ById;
use crate::framing::{frame_header, unframe};
use crate::{FormatError, RecordFault, SchemaKind, SchemaSource};

fn compile(text: &str, what: &str) -> Result<Validator, String> {
    let schema: Value =
        serde_json::from_str(text).map_err(|e| format!("{what} is not JSON: {e}"))?;
    jsonschema::validator_for(&schema)
        .map_err(|e| format!("{what} is not a valid JSON Schema: {e}"))
}

/// The first way `value` breaks `schema`, naming where.
fn check(schema: &Validator, value: &Value, what: &str) -> Result<(), RecordFault> {
    schema.validate(value).map_err(|e| {
        let at = e.instance_path().to_string();
        let at = if at.is_empty() {
            "the record".to_string()
        } else {
            format!("field `{at}`")
        };
        RecordFault(format!("{what} {at}: {e}"))
    })
}

/// Checks framed JSON values of one source against their writer schemas.
pub struct JsonSchemaDecoder {
    source: Arc<dyn SchemaSource>,
    writers: ById<Validator>,
}

impl JsonSchemaDecoder {
    pub fn new(source: Arc<dyn SchemaSource>) -> Self {
        JsonSchemaDecoder {
            source,
            writers: ById::new(),
        }
    }

    /// As [`crate::AvroDecoder::decode`]: the JSON payload, checked, to `out`.
    pub fn decode(
        &mut self,
        value: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Result<(), RecordFault>, FormatError> {
        let framed = match unframe(value) {
            Ok(f) => f,
            Err(fault) => return Ok(Err(fault)),
        };
        let id = framed.schema_id;
        let schema = match self.writers.get(
            self.source.as_ref(),
            id,
            SchemaKind::JsonSchema,
            "json-schema",
            |t| compile(t, &format!("schema id {id}")),
        )? {
            Ok(s) => s,
            Err(fault) => return Ok(Err(fault.clone())),
        };
        let parsed: Value = match serde_json::from_slice(framed.payload) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(RecordFault(format!(
                    "value framed with JSON Schema id {id} is not JSON: {e}"
                ))));
            }
        };
        if let Err(fault) = check(
            schema,
            &parsed,
            &format!("value does not match JSON Schema id {id} at"),
        ) {
            return Ok(Err(fault));
        }
        out.extend_from_slice(framed.payload);
        Ok(Ok(()))
    }
}

/// Checks outputs against one sink's JSON Schema and frames them.
pub struct JsonSchemaEncoder {
    schema: Validator,
    id: u32,
}

impl JsonSchemaEncoder {
    pub fn new(
        source: &dyn SchemaSource,
        subject: &str,
        text: &str,
    ) -> Result<JsonSchemaEncoder, FormatError> {
        let schema =
            compile(text, &format!("sink schema for `{subject}`")).map_err(FormatError::Invalid)?;
        let id = source.id_for(subject, SchemaKind::JsonSchema, text)?;
        Ok(JsonSchemaEncoder { schema, id })
    }

    pub fn schema_id(&self) -> u32 {
        self.id
    }

    pub fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), RecordFault> {
        let value: Value = serde_json::from_slice(json)
            .map_err(|e| RecordFault(format!("output is not JSON: {e}")))?;
        check(
            &self.schema,
            &value,
            "output does not fit the sink's JSON Schema at",
        )?;
        frame_header(self.id, out);
        out.extend_from_slice(json);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::FileSchemas;

    const ORDER: &str = r#"{"type":"object","properties":{
        "id":{"type":"integer"},"item":{"type":"string","maxLength":8}},
        "required":["id","item"],"additionalProperties":false}"#;

    fn framed(id: u32, json: &str) -> Vec<u8> {
        let mut v = Vec::new();
        frame_header(id, &mut v);
        v.extend_from_slice(json.as_bytes());
        v
    }

    #[test]
    fn values_are_checked_against_their_schema_and_faults_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("order.json");
        std::fs::write(&path, ORDER).unwrap();
        let files = BTreeMap::from([(4u32, path)]);
        let source = Arc::new(FileSchemas::read(&files).unwrap());
        let mut d = JsonSchemaDecoder::new(source.clone());
        let mut out = Vec::new();
        d.decode(&framed(4, r#"{"id":1,"item":"pen"}"#), &mut out)
            .unwrap()
            .unwrap();
        assert_eq!(out, br#"{"id":1,"item":"pen"}"#);
        let fault = |v: Vec<u8>, d: &mut JsonSchemaDecoder| {
            d.decode(&v, &mut Vec::new()).unwrap().unwrap_err().0
        };
        let f = fault(framed(4, r#"{"id":"one","item":"pen"}"#), &mut d);
        assert!(f.contains("field `/id`"), "{f}");
        assert!(fault(framed(4, "{not json"), &mut d).contains("is not JSON"));
        assert!(fault(framed(5, "{}"), &mut d).contains("schema id 5 is not known"));

        let e = JsonSchemaEncoder::new(source.as_ref(), "t-value", ORDER).unwrap();
        let mut out = Vec::new();
        e.encode(br#"{"id":2,"item":"ink"}"#, &mut out).unwrap();
        assert_eq!(out, framed(4, r#"{"id":2,"item":"ink"}"#));
        let f = e
            .encode(br#"{"id":2,"item":"much too long"}"#, &mut Vec::new())
            .unwrap_err()
            .0;
        assert!(f.contains("field `/item`"), "{f}");
    }

    #[test]
    fn a_schema_naming_a_remote_ref_is_refused_not_fetched() {
        // Nothing listens there; a fetch would fail differently (or hang).
        let remote = r#"{"$ref": "http://127.0.0.1:9/order.json"}"#;
        let err = compile(remote, "sink schema").unwrap_err();
        assert!(err.contains("not a valid JSON Schema"), "{err}");
        let file = r#"{"$ref": "file:///etc/passwd"}"#;
        assert!(compile(file, "sink schema").is_err());
    }
}
