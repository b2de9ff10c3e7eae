//! Where schemas come from: the trait a decoder or encoder asks by id or by
//! subject, and its two implementations (schema files listed by id in the
//! pipeline; a Confluent-compatible registry's REST API).

mod files;
mod registry;

pub use files::FileSchemas;
pub use registry::{RegistryClient, RegistryCredentials};

use crate::FormatError;

/// Which language a schema is written in (the registry's `schemaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    Avro,
    Protobuf,
    JsonSchema,
}

impl SchemaKind {
    /// The registry's `schemaType` (absent means Avro).
    pub fn registry_name(self) -> &'static str {
        match self {
            SchemaKind::Avro => "AVRO",
            SchemaKind::Protobuf => "PROTOBUF",
            SchemaKind::JsonSchema => "JSON",
        }
    }
}

/// A schema as its source holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredSchema {
    pub id: u32,
    pub kind: SchemaKind,
    /// The schema's text (Avro: its JSON).
    pub text: String,
}

/// Schemas by id, and the id of a sink's schema under its subject.
pub trait SchemaSource: Send + Sync {
    /// How errors name this source (a registry's URL, or "the pipeline's
    /// schema files").
    fn describe(&self) -> String;

    /// The schema with `id`.
    fn by_id(&self, id: u32) -> Result<RegisteredSchema, FormatError>;

    /// The id of `text` under `subject`: registered first when the source
    /// registers on use, else looked up.
    fn id_for(&self, subject: &str, kind: SchemaKind, text: &str) -> Result<u32, FormatError>;
}

/// How a sink's subject is named, as Confluent's serializers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubjectStrategy {
    /// `<topic>-value`.
    #[default]
    TopicName,
    /// The record's fully qualified name.
    RecordName,
    /// `<topic>-<fully qualified record name>`.
    TopicRecordName,
}

impl SubjectStrategy {
    pub fn parse(text: &str) -> Result<SubjectStrategy, String> {
        Ok(match text {
            "topic-name" => SubjectStrategy::TopicName,
            "record-name" => SubjectStrategy::RecordName,
            "topic-record-name" => SubjectStrategy::TopicRecordName,
            other => {
                return Err(format!(
                    "subject-name-strategy `{other}` (use \"topic-name\", \"record-name\" or \"topic-record-name\")"
                ));
            }
        })
    }

    /// The subject for values of `topic` whose record is named `record`
    /// (fully qualified; `None` for a schema that is not a named record).
    pub fn subject(self, topic: &str, record: Option<&str>) -> Result<String, String> {
        let named = || {
            record.ok_or_else(|| {
                "subject-name-strategy needs a record schema with a name; use \"topic-name\""
                    .to_string()
            })
        };
        Ok(match self {
            SubjectStrategy::TopicName => format!("{topic}-value"),
            SubjectStrategy::RecordName => named()?.to_string(),
            SubjectStrategy::TopicRecordName => format!("{topic}-{}", named()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_named_as_confluents_serializers_name_them() {
        let s = |st: SubjectStrategy| st.subject("orders", Some("shop.Order"));
        assert_eq!(s(SubjectStrategy::TopicName).unwrap(), "orders-value");
        assert_eq!(s(SubjectStrategy::RecordName).unwrap(), "shop.Order");
        assert_eq!(
            s(SubjectStrategy::TopicRecordName).unwrap(),
            "orders-shop.Order"
        );
        assert!(SubjectStrategy::RecordName.subject("t", None).is_err());
        assert!(SubjectStrategy::parse("topic").is_err());
    }
}
