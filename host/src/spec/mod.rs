//! Pipeline files: parsed into the raw form, then validated into a
//! [`Pipeline`] whose every value is checked and typed. Errors are one line:
//! `FILE:LINE:COLUMN: what is wrong`.

mod raw;
mod units;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::connectors::file_sink::FileFormat;
use crate::connectors::file_source::LineFormat;
use crate::connectors::log_source::StartingOffsets;
use crate::engine::{ErrorPolicy, Trigger};
use crate::runtime::{CallMode, Limits};
use raw::{RawPipeline, RawSink, RawSource};
use units::{flatten_config, key_location};
pub use units::{parse_duration, parse_size};

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
    },
    Files {
        dir: PathBuf,
        format: LineFormat,
        max_files_per_trigger: Option<usize>,
    },
    Rate {
        rows_per_second: u64,
        partitions: u32,
        max_records_per_trigger: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum SinkSpec {
    Log {
        root: PathBuf,
        topic: String,
        partitions: u32,
    },
    Files {
        dir: PathBuf,
        format: FileFormat,
    },
    Console,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TransformSpec {
    pub component: PathBuf,
    pub call: CallMode,
    pub on_error: ErrorPolicy,
    pub config: Vec<(String, String)>,
    pub limits: Limits,
    pub grants: Vec<String>,
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

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub name: String,
    pub mode: Mode,
    pub checkpoint: PathBuf,
    pub sources: Vec<SourceSpec>,
    /// `None`: records pass through unchanged.
    pub transform: Option<TransformSpec>,
    /// Sinks by output name; `None` is the default output.
    pub sinks: Vec<(Option<String>, SinkSpec)>,
    pub trigger: Trigger,
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
        let raw: RawPipeline = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            let location = e.span().map(|s| key_location(text, s.start, &message));
            SpecError {
                file: file.into(),
                location,
                message,
            }
        })?;
        validate(raw, base).map_err(|message| SpecError {
            file: file.into(),
            location: None,
            message,
        })
    }
}

fn validate(raw: RawPipeline, base: &Path) -> Result<Pipeline, String> {
    let path = |p: &str| base.join(p);
    let mode = match (raw.mode.as_str(), raw.checkpoint_interval.as_deref()) {
        ("micro-batch", None) => Mode::MicroBatch,
        ("micro-batch", Some(_)) => {
            return Err("checkpoint-interval applies to mode = \"continuous\" only".into());
        }
        ("continuous", i) => {
            if raw.trigger != raw::RawTrigger::default() {
                return Err("[trigger] does not apply in continuous mode (epochs follow checkpoint-interval)".into());
            }
            if raw.source.len() != 1 || !matches!(raw.source[0], RawSource::Log { .. }) {
                return Err("continuous mode reads exactly one source of type \"log\"".into());
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
    if raw.source.is_empty() {
        return Err("at least one [[source]] is required".into());
    }
    let mut sources = Vec::new();
    for (i, s) in raw.source.into_iter().enumerate() {
        sources.push(match s {
            RawSource::Log {
                path: p,
                topic,
                starting_offsets,
                max_records_per_trigger,
            } => SourceSpec::Log {
                root: path(&p),
                topic,
                starting: match starting_offsets.as_deref().unwrap_or("earliest") {
                    "earliest" => StartingOffsets::Earliest,
                    "latest" => StartingOffsets::Latest,
                    o => {
                        return Err(format!(
                            "source {i}: starting-offsets `{o}` (use \"earliest\" or \"latest\")"
                        ));
                    }
                },
                max_records_per_trigger: positive(
                    max_records_per_trigger,
                    i,
                    "max-records-per-trigger",
                )?,
            },
            RawSource::Files {
                path: p,
                format,
                max_files_per_trigger,
            } => SourceSpec::Files {
                dir: path(&p),
                format: match format.as_deref().unwrap_or("json") {
                    "json" => LineFormat::Json,
                    "raw" => LineFormat::Raw,
                    f => {
                        return Err(format!(
                            "source {i}: format `{f}` (use \"json\" or \"raw\")"
                        ));
                    }
                },
                max_files_per_trigger: positive(
                    max_files_per_trigger.map(|m| m as u64),
                    i,
                    "max-files-per-trigger",
                )?
                .map(|m| m as usize),
            },
            RawSource::Rate {
                rows_per_second,
                partitions,
                max_records_per_trigger,
            } => SourceSpec::Rate {
                rows_per_second: positive(Some(rows_per_second), i, "rows-per-second")?
                    .unwrap_or(1),
                partitions: partitions.unwrap_or(1).max(1),
                max_records_per_trigger: positive(
                    max_records_per_trigger,
                    i,
                    "max-records-per-trigger",
                )?,
            },
        });
    }
    let transform = match raw.transform {
        None => None,
        Some(t) => {
            let mut limits = Limits::default();
            if let Some(m) = &t.limits.memory {
                limits.max_memory =
                    parse_size(m).map_err(|e| format!("transform.limits.memory: {e}"))?;
            }
            if let Some(d) = &t.limits.call_timeout {
                limits.call_deadline =
                    parse_duration(d).map_err(|e| format!("transform.limits.call-timeout: {e}"))?;
            }
            let mut config = Vec::new();
            for (k, v) in t.config {
                flatten_config(k, v, &mut config)?;
            }
            Some(TransformSpec {
                component: path(&t.component),
                call: match t.call.as_deref().unwrap_or("batch") {
                    "batch" => CallMode::Batch,
                    "record" => CallMode::PerRecord,
                    c => {
                        return Err(format!(
                            "transform.call: `{c}` (use \"batch\" or \"record\")"
                        ));
                    }
                },
                on_error: match t.on_error.as_deref().unwrap_or("skip") {
                    "skip" => ErrorPolicy::Skip,
                    "fail" => ErrorPolicy::Fail,
                    p => {
                        return Err(format!(
                            "transform.on-error: `{p}` (use \"skip\" or \"fail\")"
                        ));
                    }
                },
                config,
                limits,
                grants: t.grants,
            })
        }
    };
    if raw.sink.is_empty() {
        return Err(
            "at least one [sink.<output>] is required ([sink.default] for the default output)"
                .into(),
        );
    }
    let sinks = raw
        .sink
        .into_iter()
        .map(|(name, s)| {
            let spec = match s {
                RawSink::Log {
                    path: p,
                    topic,
                    partitions,
                } => SinkSpec::Log {
                    root: path(&p),
                    topic,
                    partitions: partitions.unwrap_or(1).max(1),
                },
                RawSink::Files { path: p, format } => SinkSpec::Files {
                    dir: path(&p),
                    format: match format.as_deref().unwrap_or("values") {
                        "values" => FileFormat::Values,
                        "records" => FileFormat::Records,
                        f => {
                            return Err(format!(
                                "sink.{name}.format: `{f}` (use \"values\" or \"records\")"
                            ));
                        }
                    },
                },
                RawSink::Console => SinkSpec::Console,
            };
            Ok(((name != "default").then_some(name), spec))
        })
        .collect::<Result<_, String>>()?;
    let trigger = match (
        raw.trigger.kind.as_deref().unwrap_or("default"),
        raw.trigger.interval.as_deref(),
    ) {
        ("default", None) => Trigger::Default,
        ("once", None) => Trigger::Once,
        ("available-now", None) => Trigger::AvailableNow,
        ("processing-time", Some(i)) => Trigger::ProcessingTime(
            parse_duration(i).map_err(|e| format!("trigger.interval: {e}"))?,
        ),
        ("processing-time", None) => {
            return Err(
                "trigger: processing-time needs an interval, e.g. interval = \"1s\"".into(),
            );
        }
        (k @ ("default" | "once" | "available-now"), Some(_)) => {
            return Err(format!("trigger: `{k}` takes no interval"));
        }
        (k, _) => {
            return Err(format!(
                "trigger.type: `{k}` (use \"default\", \"processing-time\", \"once\" or \"available-now\")"
            ));
        }
    };
    Ok(Pipeline {
        name: raw.name.unwrap_or_else(|| "pipeline".into()),
        mode,
        checkpoint: path(&raw.checkpoint),
        sources,
        transform,
        sinks,
        trigger,
    })
}

fn positive(v: Option<u64>, source: usize, key: &str) -> Result<Option<u64>, String> {
    match v {
        Some(0) => Err(format!("source {source}: {key} must be at least 1")),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests;
