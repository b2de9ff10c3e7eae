//! One decoder or encoder per format, so the code around a transform
//! handles every schema'd format alike.

use std::sync::Arc;

use crate::{
    AvroDecoder, AvroEncoder, Format, FormatError, JsonSchemaDecoder, JsonSchemaEncoder,
    ProtobufDecoder, ProtobufEncoder, RecordFault, SchemaSource,
};

/// Turns one source's framed values into the JSON a guest sees.
pub enum Decoder {
    Avro(AvroDecoder),
    JsonSchema(JsonSchemaDecoder),
    Protobuf(ProtobufDecoder),
}

impl Decoder {
    /// `None` for a format that is not decoded (bytes, plain JSON).
    /// `reader`: a schema records are resolved to (Avro only).
    pub fn new(
        format: Format,
        source: Arc<dyn SchemaSource>,
        reader: Option<&str>,
    ) -> Result<Option<Decoder>, FormatError> {
        Ok(match format {
            Format::Avro => Some(Decoder::Avro(AvroDecoder::new(source, reader)?)),
            Format::JsonSchema => Some(Decoder::JsonSchema(JsonSchemaDecoder::new(source))),
            Format::Protobuf => Some(Decoder::Protobuf(ProtobufDecoder::new(source))),
            Format::Bytes | Format::Json => None,
        })
    }

    /// The outer `Err`: the schema source is down (retry, judge nothing);
    /// the inner: this record is bad.
    pub fn decode(
        &mut self,
        value: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Result<(), RecordFault>, FormatError> {
        match self {
            Decoder::Avro(d) => d.decode(value, out),
            Decoder::JsonSchema(d) => d.decode(value, out),
            Decoder::Protobuf(d) => d.decode(value, out),
        }
    }
}

/// Turns a guest's JSON output into one sink's framed values.
pub enum Encoder {
    Avro(AvroEncoder),
    JsonSchema(JsonSchemaEncoder),
    Protobuf(ProtobufEncoder),
}

impl Encoder {
    pub fn new(
        format: Format,
        source: &dyn SchemaSource,
        subject: &str,
        text: &str,
    ) -> Result<Encoder, FormatError> {
        match format {
            Format::Avro => AvroEncoder::new(source, subject, text).map(Encoder::Avro),
            Format::JsonSchema => {
                JsonSchemaEncoder::new(source, subject, text).map(Encoder::JsonSchema)
            }
            Format::Protobuf => ProtobufEncoder::new(source, subject, text).map(Encoder::Protobuf),
            Format::Bytes | Format::Json => Err(FormatError::Invalid(format!(
                "format {} has no schema to encode with",
                format.as_str()
            ))),
        }
    }

    /// The fully qualified record name the schema gives, for the
    /// record-name subject strategies (Avro records, JSON Schema `title`,
    /// the first Protobuf message).
    pub fn record_name(format: Format, text: &str) -> Option<String> {
        match format {
            Format::Avro => AvroEncoder::record_name(text),
            Format::JsonSchema => serde_json::from_str::<serde_json::Value>(text)
                .ok()?
                .get("title")?
                .as_str()
                .map(str::to_string),
            Format::Protobuf => ProtobufEncoder::record_name(text),
            Format::Bytes | Format::Json => None,
        }
    }

    pub fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), RecordFault> {
        match self {
            Encoder::Avro(e) => e.encode(json, out),
            Encoder::JsonSchema(e) => e.encode(json, out),
            Encoder::Protobuf(e) => e.encode(json, out),
        }
    }
}
