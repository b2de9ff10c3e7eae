//! `value-format` on sources and sinks, and the pipeline's `[registry]`:
//! how record values are decoded before the transform and encoded after
//! it (see `weir_formats`). Checked here so that a pipeline naming a format
//! without the schemas it needs is refused when it is loaded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use weir_formats::{Format, SubjectStrategy};

use super::units::parse_duration;

/// The longest a registry request may take before it counts as down.
const MAX_REGISTRY_TIMEOUT: Duration = Duration::from_secs(300);

/// `[registry]` as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawRegistry {
    url: Option<String>,
    username: Option<String>,
    password: Option<String>,
    auto_register: Option<bool>,
    timeout: Option<String>,
    /// Schema id -> schema file, instead of a registry.
    #[serde(default)]
    schemas: BTreeMap<String, String>,
}

/// Where schemas come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrySpec {
    /// A Confluent-compatible registry's REST API.
    Url {
        url: String,
        credentials: Option<(String, String)>,
        auto_register: bool,
        timeout: Duration,
    },
    /// Schema files by id (absolute paths).
    Files(BTreeMap<u32, PathBuf>),
}

impl RegistrySpec {
    /// The schema files it reads (none for a registry).
    pub fn files(&self) -> impl Iterator<Item = &PathBuf> {
        let files = match self {
            RegistrySpec::Files(f) => Some(f.values()),
            RegistrySpec::Url { .. } => None,
        };
        files.into_iter().flatten()
    }
}

pub(super) fn registry(raw: RawRegistry, base: &Path) -> Result<RegistrySpec, String> {
    match (raw.url, raw.schemas.is_empty()) {
        (Some(url), true) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "registry.url: `{url}` is not an http:// or https:// URL"
                ));
            }
            let credentials = match (raw.username, raw.password) {
                (Some(u), Some(p)) => Some((u, p)),
                (None, None) => None,
                _ => return Err("registry: give both username and password, or neither".into()),
            };
            let timeout = match raw.timeout {
                Some(t) => parse_duration(&t).map_err(|e| format!("registry.timeout: {e}"))?,
                None => Duration::from_secs(10),
            };
            if timeout.is_zero() || timeout > MAX_REGISTRY_TIMEOUT {
                return Err(format!(
                    "registry.timeout: must be longer than zero and at most {}s",
                    MAX_REGISTRY_TIMEOUT.as_secs()
                ));
            }
            Ok(RegistrySpec::Url {
                url,
                credentials,
                auto_register: raw.auto_register.unwrap_or(true),
                timeout,
            })
        }
        (None, false) => {
            if raw.username.is_some() || raw.password.is_some() || raw.timeout.is_some() {
                return Err(
                    "registry: username, password and timeout apply to a registry url, not to [registry.schemas]".into(),
                );
            }
            if raw.auto_register == Some(true) {
                return Err("registry.auto-register: schema files cannot be registered to; list the sink's schema under its id".into());
            }
            let mut files = BTreeMap::new();
            for (id, path) in raw.schemas {
                let id: u32 = id.parse().map_err(|_| {
                    format!("registry.schemas: `{id}` is not a schema id (a number from 0 to 4294967295)")
                })?;
                files.insert(id, base.join(path));
            }
            Ok(RegistrySpec::Files(files))
        }
        (Some(_), false) => {
            Err("registry: give a url or [registry.schemas], not both".into())
        }
        (None, true) => Err(
            "registry: give the url of a schema registry, or schema files by id in [registry.schemas]".into(),
        ),
    }
}

/// A source's or sink's value format, with its schema file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ValueFormat {
    pub format: Format,
    /// Sources: the reader schema; sinks: the schema records are written with.
    pub schema: Option<PathBuf>,
    /// Sinks: how the subject of the schema is named.
    pub subject_strategy: SubjectStrategy,
}

impl ValueFormat {
    /// Values carry a schema id and are decoded before the transform.
    pub fn is_decoded(&self) -> bool {
        self.format.is_registered()
    }
}

/// The format keys of one source or sink as written.
#[derive(Debug, Default)]
pub struct RawValueFormat {
    pub format: Option<String>,
    pub schema: Option<String>,
    pub subject_strategy: Option<String>,
}

/// `at`: "source 0", "sink.default"; `sink`: whether subjects apply;
/// `plain`: the connector carries bytes (log, kafka) rather than lines.
pub(super) fn value_format(
    at: &str,
    raw: RawValueFormat,
    base: &Path,
    sink: bool,
    plain: bool,
) -> Result<ValueFormat, String> {
    let format = match raw.format.as_deref() {
        None => Format::Bytes,
        Some(f) => Format::parse(f).map_err(|e| format!("{at}.value-format: {e}"))?,
    };
    if format != Format::Bytes && !plain {
        return Err(format!(
            "{at}.value-format applies to log and kafka {}s",
            if sink { "sink" } else { "source" }
        ));
    }
    let schema = raw.schema.map(|s| base.join(s));
    let takes_schema = format == Format::Avro || (sink && format.is_registered());
    if schema.is_some() && !takes_schema {
        return Err(format!(
            "{at}.value-schema applies to value-format = \"avro\" (a reader schema) and to sinks of a schema'd format"
        ));
    }
    if sink && format.is_registered() && schema.is_none() {
        return Err(format!(
            "{at}: value-format = \"{}\" needs value-schema, the schema file records are written with",
            format.as_str()
        ));
    }
    let subject_strategy = match raw.subject_strategy {
        Some(_) if !sink => {
            return Err(format!("{at}.subject-name-strategy applies to sinks"));
        }
        Some(s) => SubjectStrategy::parse(&s).map_err(|e| format!("{at}.{e}"))?,
        None => SubjectStrategy::default(),
    };
    Ok(ValueFormat {
        format,
        schema,
        subject_strategy,
    })
}

/// What a pipeline with decoded formats must hold to: a registry for every
/// Avro source or sink, and no JSON field read from a value before it is
/// decoded (state keys and event times by field are read ahead of the
/// transform, where an Avro source's values are still Avro).
pub(super) fn check_pipeline(
    sources: &[ValueFormat],
    sinks: &[ValueFormat],
    registry: Option<&RegistrySpec>,
    state: &weir_engine::state::StatefulOptions,
    state_key: Option<&weir_engine::exchange::Partitioning>,
) -> Result<(), String> {
    let registered = sources.iter().chain(sinks).any(ValueFormat::is_decoded);
    if registered && registry.is_none() {
        return Err(
            "value-format = \"avro\" or \"json-schema\" needs a [registry]: a url, or schema files by id in [registry.schemas]".into(),
        );
    }
    if !registered && registry.is_some() {
        return Err("[registry] applies when a source or sink has value-format = \"avro\" or \"json-schema\"".into());
    }
    for (i, f) in sources.iter().enumerate() {
        if !f.is_decoded() {
            continue;
        }
        let by_field = |k: &weir_engine::exchange::StateKey| {
            matches!(k, weir_engine::exchange::StateKey::Field(_))
        };
        if let Some(p) = state_key
            && (p.source_keys.get(&i).is_some_and(by_field)
                || (!p.source_keys.contains_key(&i) && by_field(&p.key)))
        {
            return Err(format!(
                "source {i}: state is keyed by a value field, which is read before a {} value is decoded; key it by the record key ([state] key = \"record-key\")",
                f.format.as_str()
            ));
        }
        if let Some(et) = &state.event_time
            && et.field_of(i).is_some()
        {
            return Err(format!(
                "source {i}: event time is read from a value field before a {} value is decoded; use the record timestamp (leave [event-time] field out)",
                f.format.as_str()
            ));
        }
    }
    Ok(())
}
