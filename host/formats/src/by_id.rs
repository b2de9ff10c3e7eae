//! Writer schemas by id, fetched once each, shared by every format's
//! decoder: an id the source does not know, or a schema of another kind or
//! that does not compile, is remembered as a fault of every record naming
//! it; only a source that cannot answer is an error (retried by the caller).

use std::collections::HashMap;

use crate::{FormatError, RecordFault, SchemaKind, SchemaSource};

pub(crate) struct ById<T> {
    schemas: HashMap<u32, Result<T, RecordFault>>,
}

impl<T> ById<T> {
    pub(crate) fn new() -> Self {
        ById {
            schemas: HashMap::new(),
        }
    }

    /// The schema `id` compiled by `compile`, fetched from `source` the
    /// first time; `format` names the source's format in faults.
    pub(crate) fn get(
        &mut self,
        source: &dyn SchemaSource,
        id: u32,
        kind: SchemaKind,
        format: &str,
        compile: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<&Result<T, RecordFault>, FormatError> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.schemas.entry(id) {
            let fetched = match source.by_id(id) {
                Ok(s) if s.kind != kind => Err(RecordFault(format!(
                    "schema id {id} is a {} schema, and this source's format is {format}",
                    s.kind.registry_name()
                ))),
                Ok(s) => compile(&s.text).map_err(RecordFault),
                Err(e @ FormatError::Unavailable { .. }) => return Err(e),
                Err(e) => Err(RecordFault(e.to_string())),
            };
            slot.insert(fetched);
        }
        Ok(&self.schemas[&id])
    }
}
