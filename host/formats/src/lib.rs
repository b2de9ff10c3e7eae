//! Record formats at the boundary of a pipeline: what a source's values are
//! decoded from before the transform sees them, and what a sink's values are
//! encoded to after it. A guest always sees JSON for a schema'd format, so
//! every SDK language gets typed records through its JSON helpers, and the
//! host's key-field, event-time and window operators read them as they read
//! JSON records.
//!
//! Avro is framed as Confluent's serializers frame it (magic byte 0, a
//! 4-byte big-endian schema id, the Avro binary datum); the schema behind an
//! id comes from a [`SchemaSource`]: schema files listed by id in the
//! pipeline, or a Confluent-compatible registry over its REST API.

mod avro;
mod by_id;
mod codec;
mod error;
pub mod framing;
mod json_schema;
mod protobuf;
mod schemas;

pub use avro::{AvroDecoder, AvroEncoder};
pub use codec::{Decoder, Encoder};
pub use error::{FormatError, RecordFault};
pub use json_schema::{JsonSchemaDecoder, JsonSchemaEncoder};
pub use protobuf::{ProtobufDecoder, ProtobufEncoder};
pub use schemas::{
    FileSchemas, RegisteredSchema, RegistryClient, RegistryCredentials, SchemaKind, SchemaSource,
    SubjectStrategy,
};

/// How a source's or sink's record values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Bytes as they are: nothing decoded or checked.
    #[default]
    Bytes,
    /// JSON text, passed as it is.
    Json,
    /// Avro binary with Confluent framing, decoded to JSON for the guest.
    Avro,
    /// JSON with Confluent framing, checked against its JSON Schema.
    JsonSchema,
    /// Protobuf with Confluent framing (and message indexes), as JSON for the guest.
    Protobuf,
}

impl Format {
    /// The format named `text` in a pipeline file.
    pub fn parse(text: &str) -> Result<Format, String> {
        Ok(match text {
            "bytes" => Format::Bytes,
            "json" => Format::Json,
            "avro" => Format::Avro,
            "json-schema" => Format::JsonSchema,
            "protobuf" => Format::Protobuf,
            other => {
                return Err(format!(
                    "format `{other}` (use \"avro\", \"protobuf\", \"json-schema\", \"json\" or \"bytes\")"
                ));
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Bytes => "bytes",
            Format::Json => "json",
            Format::Avro => "avro",
            Format::JsonSchema => "json-schema",
            Format::Protobuf => "protobuf",
        }
    }

    /// Whether values carry a schema id and go through a codec.
    pub fn is_registered(self) -> bool {
        matches!(self, Format::Avro | Format::JsonSchema | Format::Protobuf)
    }
}
