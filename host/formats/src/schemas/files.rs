//! Schemas from files listed by id in the pipeline (`[registry.schemas]`),
//! as Spark's `from_avro` takes a schema: records are still framed with the
//! id, so writers that used a registry elsewhere can be read without one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{RegisteredSchema, SchemaKind, SchemaSource};
use crate::FormatError;

/// Schema files by id, read once when the pipeline starts.
#[derive(Debug, Clone)]
pub struct FileSchemas {
    by_id: BTreeMap<u32, RegisteredSchema>,
}

impl FileSchemas {
    /// Read every listed file; a missing or unreadable file is an error now,
    /// not at the first record that names it.
    pub fn read(files: &BTreeMap<u32, PathBuf>) -> Result<FileSchemas, FormatError> {
        let mut by_id = BTreeMap::new();
        for (&id, path) in files {
            let text = std::fs::read_to_string(path).map_err(|e| {
                FormatError::Invalid(format!("schema {id}: reading {}: {e}", path.display()))
            })?;
            by_id.insert(
                id,
                RegisteredSchema {
                    id,
                    kind: kind_of(path),
                    text,
                },
            );
        }
        Ok(FileSchemas { by_id })
    }
}

/// `.json` is a JSON Schema; `.proto` a Protobuf schema; others Avro.
fn kind_of(path: &Path) -> SchemaKind {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => SchemaKind::JsonSchema,
        Some("proto") => SchemaKind::Protobuf,
        _ => SchemaKind::Avro,
    }
}

impl SchemaSource for FileSchemas {
    fn describe(&self) -> String {
        "the pipeline's [registry.schemas]".into()
    }

    fn by_id(&self, id: u32) -> Result<RegisteredSchema, FormatError> {
        self.by_id
            .get(&id)
            .cloned()
            .ok_or_else(|| FormatError::UnknownId(id, self.describe()))
    }

    /// The id listed for a file with the same schema (compared parsed:
    /// Avro by its canonical form, JSON Schema as JSON, so whitespace and
    /// key order do not matter).
    fn id_for(&self, subject: &str, kind: SchemaKind, text: &str) -> Result<u32, FormatError> {
        let same = |t: &str| -> Result<String, FormatError> {
            let bad = |e: String| FormatError::Invalid(format!("schema for `{subject}`: {e}"));
            match kind {
                SchemaKind::Avro => apache_avro::Schema::parse_str(t)
                    .map(|s| s.canonical_form())
                    .map_err(|e| bad(e.to_string())),
                SchemaKind::JsonSchema => serde_json::from_str::<serde_json::Value>(t)
                    .map(|v| v.to_string())
                    .map_err(|e| bad(e.to_string())),
                SchemaKind::Protobuf => Ok(t.trim().to_string()),
            }
        };
        let wanted = same(text)?;
        for s in self.by_id.values().filter(|s| s.kind == kind) {
            if same(&s.text)? == wanted {
                return Ok(s.id);
            }
        }
        Err(FormatError::Invalid(format!(
            "the sink's schema for `{subject}` is not listed in [registry.schemas]; list its file under the id its records are framed with"
        )))
    }
}
