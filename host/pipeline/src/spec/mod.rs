//! Pipeline files: parsed into the raw form, then validated into a
//! [`Pipeline`] whose every value is checked and typed. Errors are one line:
//! `FILE:LINE:COLUMN: what is wrong`.

mod connectors;
mod formats;
mod group;
mod host;
mod kafka;
mod on_error;
mod raw;
mod sources;
mod state;
mod transform;
mod trigger;
mod units;
mod window;

use std::path::{Path, PathBuf};
use std::time::Duration;
use weir_connectors::checkpoints::CheckpointLocation;

pub use formats::{RegistrySpec, ValueFormat};
pub use host::{HostSpec, TenantSpec};
pub use on_error::OnError;
use raw::{RawPipeline, RawSource};
pub use transform::{GuestEnv, GuestLimits, limits_from_pairs, limits_table};
use units::key_location;
pub use units::{parse_duration, parse_size};
use weir_connectors::file_sink::FileFormat;
use weir_connectors::file_source::LineFormat;
use weir_connectors::kafka::{ConsumerGroup, KafkaSinkOptions, KafkaSourceOptions};
use weir_connectors::log_source::StartingOffsets;
use weir_engine::{IdleWait, PidConfig, RecordLimits, Trigger};
use weir_runtime::{CallMode, Limits, Sandbox};
pub use window::{MAX_WINDOWS_PER_RECORD, WindowAggregation};

#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", location.map_or(String::new(), |(l, c)| format!(":{l}:{c}")))]
pub struct SpecError {
    pub file: String,
    pub location: Option<(usize, usize)>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SourceSpec {
    Log {
        root: PathBuf,
        topic: String,
        starting: StartingOffsets,
        max_records_per_trigger: Option<u64>,
        /// About this many bytes of input per batch at most.
        max_bytes_per_trigger: u64,
    },
    Files {
        dir: PathBuf,
        format: LineFormat,
        max_files_per_trigger: Option<usize>,
        /// Files up to this many bytes per batch (at least one).
        max_bytes_per_trigger: u64,
    },
    Rate {
        rows_per_second: u64,
        partitions: u32,
        max_records_per_trigger: Option<u64>,
    },
    Kafka(KafkaSourceOptions),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SinkSpec {
    Log {
        root: PathBuf,
        topic: String,
        partitions: u32,
        /// `write = "as-produced"`: records go to the topic as tasks make
        /// them (continuous mode), each epoch committed at its end.
        as_produced: bool,
        /// Where a topic the sink creates rolls to a new segment file
        /// (`segment-size`; an existing topic keeps its own).
        segment_bytes: u64,
    },
    Files {
        dir: PathBuf,
        format: FileFormat,
    },
    Console,
    Kafka(KafkaSinkOptions),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TransformSpec {
    pub component: PathBuf,
    pub call: CallMode,
    pub on_error: OnError,
    pub config: Vec<(String, String)>,
    pub limits: Limits,
    pub record_limits: RecordLimits,
    pub grants: Vec<String>,
    pub sandbox: Sandbox,
}

/// How the pipeline executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    MicroBatch,
    /// Long-running per-partition tasks, epochs of this length.
    Continuous {
        checkpoint_interval: Duration,
    },
}

impl Mode {
    /// The engine's execution mode (what its checkpoints record).
    pub fn execution(&self) -> weir_engine::wal::ExecutionMode {
        match self {
            Mode::MicroBatch => weir_engine::wal::ExecutionMode::MicroBatch,
            Mode::Continuous { .. } => weir_engine::wal::ExecutionMode::Continuous,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub name: String,
    pub mode: Mode,
    /// A directory, or an object store URL (`s3://bucket/prefix`).
    pub checkpoint: CheckpointLocation,
    pub sources: Vec<SourceSpec>,
    /// `None`: records pass through unchanged (or `window` aggregates them).
    pub transform: Option<TransformSpec>,
    /// `[window]`: the host aggregates per key and window instead.
    pub window: Option<WindowAggregation>,
    /// Sinks by output name; `None` is the default output.
    pub sinks: Vec<(Option<String>, SinkSpec)>,
    pub trigger: Trigger,
    /// How the query waits when a trigger finds no new data.
    pub idle: IdleWait,
    /// PID rate control of batch sizes (processing-time trigger only).
    pub backpressure: Option<PidConfig>,
    /// Event time, output mode and state checkpointing. `stateful` is
    /// decided when the component is loaded (it imports state or timers).
    pub state: weir_engine::state::StatefulOptions,
    /// How state is keyed, when `[state]` says (a stateful transform needs it).
    pub state_key: Option<weir_engine::exchange::Partitioning>,
    /// `[group]`: one member of a consumer group sharing the partitions.
    pub group: Option<ConsumerGroup>,
    /// Each source's value format, by source index.
    pub source_formats: Vec<ValueFormat>,
    /// Each sink's value format, in the order of `sinks`.
    pub sink_formats: Vec<ValueFormat>,
    /// `[registry]`: where Avro schemas come from.
    pub registry: Option<RegistrySpec>,
}

impl Pipeline {
    /// Load and validate a pipeline file. Relative paths inside it are
    /// relative to the file's directory.
    pub fn load(path: &Path) -> Result<Pipeline, SpecError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SpecError {
            file: file.clone(),
            location: None,
            message: format!("cannot read: {e}"),
        })?;
        // Absolute paths: a source's identity in the checkpoint must not
        // depend on the directory weir was started from.
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let base = std::fs::canonicalize(dir).map_err(|e| SpecError {
            file: file.clone(),
            location: None,
            message: format!("cannot resolve its directory: {e}"),
        })?;
        Self::parse(&text, &file, &base)
    }

    pub fn parse(text: &str, file: &str, base: &Path) -> Result<Pipeline, SpecError> {
        Self::parse_with(text, file, base, GuestEnv::Process)
    }

    /// [`Self::parse`], the sandbox's variables taken from `env`.
    pub fn parse_with(
        text: &str,
        file: &str,
        base: &Path,
        env: GuestEnv<'_>,
    ) -> Result<Pipeline, SpecError> {
        let raw: RawPipeline = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            let location = e.span().map(|s| key_location(text, s.start, &message));
            SpecError {
                file: file.into(),
                location,
                message,
            }
        })?;
        validate(raw, base, env).map_err(|message| SpecError {
            file: file.into(),
            location: None,
            message,
        })
    }
}

fn validate(raw: RawPipeline, base: &Path, env: GuestEnv<'_>) -> Result<Pipeline, String> {
    let mode = match (raw.mode.as_str(), raw.checkpoint_interval.as_deref()) {
        ("micro-batch", None) => Mode::MicroBatch,
        ("micro-batch", Some(_)) => {
            return Err("checkpoint-interval applies to mode = \"continuous\" only".into());
        }
        ("continuous", i) => {
            if raw.trigger != raw::RawTrigger::default() {
                return Err("[trigger] does not apply in continuous mode (epochs follow checkpoint-interval)".into());
            }
            if raw
                .source
                .iter()
                .any(|s| !matches!(s.kind, RawSource::Log { .. } | RawSource::Kafka(_)))
            {
                return Err(
                    "continuous mode reads sources of type \"log\" or \"kafka\" (files and rate sources are for micro-batch mode)".into(),
                );
            }
            if raw.backpressure.is_some() {
                return Err("[backpressure] applies to micro-batch mode only".into());
            }
            let interval = parse_duration(i.unwrap_or("100ms"))
                .map_err(|e| format!("checkpoint-interval: {e}"))?;
            if interval.is_zero() {
                return Err("checkpoint-interval must be longer than zero".into());
            }
            Mode::Continuous {
                checkpoint_interval: interval,
            }
        }
        (m, _) => {
            return Err(format!(
                "mode: unknown mode `{m}` (use \"micro-batch\" or \"continuous\")"
            ));
        }
    };
    let inputs = sources::sources(raw.source, base)?;
    let transform = raw
        .transform
        .map(|t| transform::transform(t, base, env))
        .transpose()?;
    let window = raw.window.map(window::window).transpose()?;
    window::check_alone(window.as_ref(), transform.is_some())?;
    if raw.sink.is_empty() {
        return Err(
            "at least one [sink.<output>] is required ([sink.default] for the default output)"
                .into(),
        );
    }
    let mut sinks: Vec<(Option<String>, SinkSpec)> = Vec::new();
    let mut sink_formats = Vec::new();
    for (name, s) in raw.sink {
        let plain = matches!(s.kind, raw::RawSink::Log { .. } | raw::RawSink::Kafka(_));
        let at = format!("sink.{name}");
        sink_formats.push(formats::value_format(&at, s.format, base, true, plain)?);
        let spec = connectors::sink(&name, s.kind, base)?;
        sinks.push(((name != "default").then_some(name), spec));
    }
    if matches!(mode, Mode::MicroBatch)
        && let Some((name, _)) = sinks.iter().find(|(_, s)| {
            matches!(
                s,
                SinkSpec::Log {
                    as_produced: true,
                    ..
                }
            )
        })
    {
        return Err(format!(
            "sink.{}.write = \"as-produced\" applies to mode = \"continuous\" (a micro-batch writes its output when the batch commits)",
            name.as_deref().unwrap_or("default")
        ));
    }
    let on_error = transform
        .as_ref()
        .map(|t| t.on_error)
        .or(window.as_ref().map(|w| w.on_error));
    if on_error == Some(OnError::DeadLetter)
        && !sinks
            .iter()
            .any(|(n, _)| n.as_deref() == Some(weir_engine::DEAD_LETTER))
    {
        return Err(format!(
            "{}.on-error = \"dead-letter\" needs a [sink.dead-letter] to write them to",
            if window.is_some() {
                "window"
            } else {
                "transform"
            }
        ));
    }
    let trigger = trigger::trigger(&raw.trigger)?;
    let idle = trigger::idle_wait(&raw.trigger)?;
    let backpressure = raw
        .backpressure
        .map(|b| trigger::backpressure(b, trigger))
        .transpose()?
        .flatten();
    let (state, state_key) = state::options(
        raw.output_mode,
        raw.event_time,
        raw.state,
        matches!(mode, Mode::Continuous { .. }),
        &inputs,
    )?;
    let registry = raw
        .registry
        .map(|r| formats::registry(r, base))
        .transpose()?;
    let source_formats = inputs.formats;
    formats::check_pipeline(
        &source_formats,
        &sink_formats,
        registry.as_ref(),
        &state,
        state_key.as_ref(),
    )?;
    let sources = inputs.specs;
    window::check_keyed(window.as_ref(), state_key.is_some(), &state)?;
    if let Some(p) = &state_key
        && !p.exchange
        && sources.len() != 1
    {
        return Err("state.exchange = false applies to a pipeline with one source".into());
    }
    let group = raw
        .group
        .map(|g| g.validate(&sources, &sinks, trigger))
        .transpose()?;
    let files = |s: &SourceSpec| matches!(s, SourceSpec::Files { .. });
    if let Some(et) = &state.event_time
        && et.rule == weir_engine::state::WatermarkRule::SlowestPartition
        && sources.iter().any(files)
    {
        return Err("event-time.watermark = \"slowest-partition\" applies to partitioned logs (log, kafka, rate); a file is not a partition (use \"max-event-time\")".into());
    }
    if state_key.as_ref().is_some_and(|p| !p.exchange) && sources.iter().any(files) {
        return Err(
            "state.exchange = false needs a source partitioned by key (log or kafka), not files"
                .into(),
        );
    }
    Ok(Pipeline {
        name: raw.name.unwrap_or_else(|| "pipeline".into()),
        mode,
        checkpoint: CheckpointLocation::parse(&raw.checkpoint, base),
        sources,
        transform,
        window,
        sinks,
        trigger,
        idle,
        backpressure,
        state,
        state_key,
        group,
        source_formats,
        sink_formats,
        registry,
    })
}

#[cfg(test)]
mod tests;
