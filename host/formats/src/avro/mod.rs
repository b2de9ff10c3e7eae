//! Avro values with Confluent framing, to JSON for the guest and back.
//! Decoding resolves each record from the schema it was written with (its
//! id) to the pipeline's reader schema when one is given, as Avro's schema
//! resolution says: a field added with a default reads as that default.

use std::sync::Arc;

use apache_avro::Schema;
use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value as AvroValue;
use apache_avro::writer::datum::GenericDatumWriter;
use serde_json::Value as JsonValue;

use crate::by_id::ById;
use crate::framing::{frame_header, unframe};
use crate::{FormatError, RecordFault, SchemaKind, SchemaSource};

/// Decodes framed Avro values of one source into JSON text.
pub struct AvroDecoder {
    source: Arc<dyn SchemaSource>,
    reader: Option<Schema>,
    /// Writer schemas by id, fetched once each.
    writers: ById<Schema>,
}

impl AvroDecoder {
    /// `reader`: the schema records are read as (a `.avsc`'s text); `None`
    /// reads each record as it was written.
    pub fn new(source: Arc<dyn SchemaSource>, reader: Option<&str>) -> Result<Self, FormatError> {
        let reader = reader
            .map(|t| {
                Schema::parse_str(t)
                    .map_err(|e| FormatError::Invalid(format!("reader schema: {e}")))
            })
            .transpose()?;
        Ok(AvroDecoder {
            source,
            reader,
            writers: ById::new(),
        })
    }

    /// Append `value` decoded as JSON to `out`. The outer `Err` means the
    /// schema source is down (retry later, judge nothing); the inner one
    /// that this record is bad.
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
        let writer =
            match self
                .writers
                .get(self.source.as_ref(), id, SchemaKind::Avro, "avro", |t| {
                    Schema::parse_str(t)
                        .map_err(|e| format!("schema id {id} is not a valid Avro schema: {e}"))
                })? {
                Ok(w) => w,
                Err(fault) => return Ok(Err(fault.clone())),
            };
        Ok(read_datum(
            writer,
            self.reader.as_ref(),
            framed.payload,
            framed.schema_id,
            out,
        ))
    }
}

fn read_datum(
    writer: &Schema,
    reader: Option<&Schema>,
    payload: &[u8],
    id: u32,
    out: &mut Vec<u8>,
) -> Result<(), RecordFault> {
    let mut rest = payload;
    let value = GenericDatumReader::builder(writer)
        .maybe_reader_schema(reader)
        .build()
        .and_then(|r| r.read_value(&mut rest))
        .map_err(|e| RecordFault(format!("bytes do not match Avro schema id {id}: {e}")))?;
    if !rest.is_empty() {
        return Err(RecordFault(format!(
            "bytes do not match Avro schema id {id}: {} bytes left after the record",
            rest.len()
        )));
    }
    let json = JsonValue::try_from(value)
        .map_err(|e| RecordFault(format!("Avro record has no JSON form: {e}")))?;
    serde_json::to_writer(out, &json).expect("writing JSON to a Vec");
    Ok(())
}

/// Encodes JSON values as framed Avro against one sink's schema.
pub struct AvroEncoder {
    schema: Schema,
    id: u32,
}

impl AvroEncoder {
    /// The sink's schema (`text`) and the id its records are framed with
    /// (registered under `subject`, or looked up, by `source`).
    pub fn new(
        source: &dyn SchemaSource,
        subject: &str,
        text: &str,
    ) -> Result<AvroEncoder, FormatError> {
        let schema = Schema::parse_str(text)
            .map_err(|e| FormatError::Invalid(format!("sink schema for `{subject}`: {e}")))?;
        let id = source.id_for(subject, SchemaKind::Avro, text)?;
        Ok(AvroEncoder { schema, id })
    }

    /// The fully qualified name of the sink's record schema, for the
    /// record-name subject strategies.
    pub fn record_name(text: &str) -> Option<String> {
        match Schema::parse_str(text).ok()? {
            Schema::Record(r) => Some(r.name.fullname(None)),
            _ => None,
        }
    }

    pub fn schema_id(&self) -> u32 {
        self.id
    }

    /// Append `json` encoded against the sink's schema, framed, to `out`.
    pub fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), RecordFault> {
        let value: JsonValue = serde_json::from_slice(json)
            .map_err(|e| RecordFault(format!("output is not JSON, so it cannot be Avro: {e}")))?;
        let avro = fit(&value, &self.schema, "")?;
        let start = out.len();
        frame_header(self.id, out);
        GenericDatumWriter::builder(&self.schema)
            .build()
            .and_then(|w| w.write_value(out, avro))
            .map(drop)
            .map_err(|e| {
                out.truncate(start);
                RecordFault(format!("output does not fit the sink's schema: {e}"))
            })
    }
}

/// `value` as an Avro value of `schema`, or the first field that does not
/// fit, named by its path (fields of records are checked one by one so the
/// error can say which; JSON fields the schema lacks are refused rather
/// than dropped).
fn fit(value: &JsonValue, schema: &Schema, path: &str) -> Result<AvroValue, RecordFault> {
    let at = |p: &str| {
        if p.is_empty() {
            "the record".to_string()
        } else {
            format!("field `{p}`")
        }
    };
    if let (Schema::Record(r), JsonValue::Object(obj)) = (schema, value) {
        if let Some(extra) = obj.keys().find(|k| !r.lookup.contains_key(*k)) {
            let p = join(path, extra);
            return Err(RecordFault(format!(
                "output field `{p}` is not in the sink's schema {}",
                r.name.fullname(None)
            )));
        }
        let mut fields = Vec::with_capacity(r.fields.len());
        for f in &r.fields {
            let p = join(path, &f.name);
            let v = match obj.get(&f.name) {
                Some(v) => fit(v, &f.schema, &p)?,
                None => match &f.default {
                    Some(d) => fit(d, &f.schema, &p)?,
                    None => {
                        return Err(RecordFault(format!(
                            "output field `{p}` is missing and the sink's schema gives it no default"
                        )));
                    }
                },
            };
            fields.push((f.name.clone(), v));
        }
        return Ok(AvroValue::Record(fields));
    }
    let avro = AvroValue::try_from(value.clone())
        .map_err(|e| RecordFault(format!("output {}: {e}", at(path))))?;
    avro.resolve(schema).map_err(|e| {
        RecordFault(format!(
            "output {} does not fit the sink's schema ({}): {e}",
            at(path),
            kind_name(schema)
        ))
    })
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn kind_name(schema: &Schema) -> String {
    let c = schema.canonical_form();
    if c.len() > 80 {
        format!(
            "{}...",
            &c[..c.char_indices().nth(77).map_or(c.len(), |(i, _)| i)]
        )
    } else {
        c
    }
}

#[cfg(test)]
mod tests;
