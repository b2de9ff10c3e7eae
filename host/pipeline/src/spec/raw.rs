//! The pipeline file as written: kebab-case TOML, every table refusing
//! unknown keys, so a typo is an error that names the key and its line.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::formats::RawValueFormat;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawPipeline {
    pub name: Option<String>,
    #[serde(default = "default_mode")]
    pub mode: String,
    pub checkpoint: String,
    /// Epoch length in continuous mode.
    pub checkpoint_interval: Option<String>,
    pub source: Vec<RawSourceEntry>,
    pub transform: Option<RawTransform>,
    pub window: Option<super::window::RawWindow>,
    pub sink: BTreeMap<String, RawSinkEntry>,
    #[serde(default)]
    pub trigger: RawTrigger,
    pub backpressure: Option<RawBackpressure>,
    /// Stateful queries: "append", "update" or "complete".
    pub output_mode: Option<String>,
    pub event_time: Option<RawEventTime>,
    pub state: Option<RawState>,
    pub group: Option<super::group::RawGroup>,
    pub registry: Option<super::formats::RawRegistry>,
}

/// Where event time comes from and how late data is treated.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawEventTime {
    pub field: Option<String>,
    pub delay: Option<String>,
    pub late: Option<String>,
    pub idle_timeout: Option<String>,
    pub watermark: Option<String>,
}

/// How keyed state is checkpointed.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawState {
    pub snapshot_interval: Option<u64>,
    pub backend: Option<String>,
    pub key: Option<String>,
    pub key_field: Option<String>,
    pub partitions: Option<u32>,
    pub exchange: Option<bool>,
}

/// Spark Streaming's PID backpressure settings.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawBackpressure {
    pub enabled: Option<bool>,
    pub initial_rate: Option<f64>,
    pub min_rate: Option<f64>,
    pub proportional: Option<f64>,
    pub integral: Option<f64>,
    pub derivative: Option<f64>,
}

fn default_mode() -> String {
    "micro-batch".into()
}

/// One `[[source]]`: the keys every source type shares, then its type's own
/// (which refuse unknown keys, as every table does).
#[derive(Debug)]
pub struct RawSourceEntry {
    pub name: Option<String>,
    /// This source's state key field, when not the `[state]` key.
    pub key_field: Option<String>,
    /// This source's event-time field, when not `[event-time] field`.
    pub event_time_field: Option<String>,
    /// `value-format` and `value-schema`.
    pub format: RawValueFormat,
    pub kind: RawSource,
}

/// Take string key `k` out of `table` (shared keys are read before the
/// connector's own table, which refuses keys it does not know).
fn take_string<E: serde::de::Error>(
    table: &mut toml::Table,
    at: &str,
    k: &str,
) -> Result<Option<String>, E> {
    match table.remove(k) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(E::custom(format!(
            "{at} {k}: expected a string, found {}",
            v.type_str()
        ))),
    }
}

impl<'de> Deserialize<'de> for RawSourceEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut table = toml::Table::deserialize(d)?;
        let mut take = |k: &str| take_string::<D::Error>(&mut table, "source", k);
        Ok(RawSourceEntry {
            name: take("name")?,
            key_field: take("key-field")?,
            event_time_field: take("event-time-field")?,
            format: RawValueFormat {
                format: take("value-format")?,
                schema: take("value-schema")?,
                subject_strategy: take("subject-name-strategy")?,
            },
            kind: RawSource::deserialize(toml::Value::Table(table)).map_err(D::Error::custom)?,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RawSource {
    #[serde(rename_all = "kebab-case")]
    Log {
        path: String,
        topic: String,
        #[serde(default)]
        starting_offsets: Option<String>,
        max_records_per_trigger: Option<u64>,
        max_bytes_per_trigger: Option<String>,
    },
    #[serde(rename_all = "kebab-case")]
    Files {
        path: String,
        #[serde(default)]
        format: Option<String>,
        max_files_per_trigger: Option<usize>,
        max_bytes_per_trigger: Option<String>,
    },
    Kafka(super::kafka::RawKafkaSource),
    #[serde(rename_all = "kebab-case")]
    Rate {
        rows_per_second: u64,
        partitions: Option<u32>,
        max_records_per_trigger: Option<u64>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawTransform {
    pub component: String,
    #[serde(default)]
    pub call: Option<String>,
    #[serde(default)]
    pub on_error: Option<String>,
    #[serde(default)]
    pub config: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub grants: Vec<String>,
    #[serde(default)]
    pub sandbox: RawSandbox,
}

/// Capabilities granted to the guest (see SECURITY.md).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawSandbox {
    /// Guest path -> host directory (relative to the pipeline file), read-only.
    #[serde(default)]
    pub dirs: BTreeMap<String, String>,
    /// Names of host environment variables the guest may read.
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub wall_clock: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawLimits {
    pub memory: Option<String>,
    pub call_timeout: Option<String>,
    pub max_record_size: Option<String>,
    pub max_outputs_per_record: Option<usize>,
    pub max_output_bytes: Option<String>,
    pub crash_loop_traps: Option<usize>,
    pub crash_window: Option<String>,
    pub state: Option<String>,
    pub fuel: Option<u64>,
}

/// One `[sink.<output>]`: the format keys every sink shares, then its
/// type's own.
#[derive(Debug)]
pub struct RawSinkEntry {
    pub format: RawValueFormat,
    pub kind: RawSink,
}

impl<'de> Deserialize<'de> for RawSinkEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut table = toml::Table::deserialize(d)?;
        let mut take = |k: &str| take_string::<D::Error>(&mut table, "sink", k);
        Ok(RawSinkEntry {
            format: RawValueFormat {
                format: take("value-format")?,
                schema: take("value-schema")?,
                subject_strategy: take("subject-name-strategy")?,
            },
            kind: RawSink::deserialize(toml::Value::Table(table)).map_err(D::Error::custom)?,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RawSink {
    #[serde(rename_all = "kebab-case")]
    Log {
        path: String,
        topic: String,
        partitions: Option<u32>,
        write: Option<String>,
        segment_size: Option<String>,
    },
    #[serde(rename_all = "kebab-case")]
    Files {
        path: String,
        #[serde(default)]
        format: Option<String>,
    },
    /// Empty, so that a misplaced key is refused rather than ignored.
    Console {},
    Kafka(super::kafka::RawKafkaSink),
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawTrigger {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub interval: Option<String>,
    pub idle_poll: Option<String>,
    pub max_idle_poll: Option<String>,
    pub wake_timeout: Option<String>,
}
