//! Validation of `[[source]]` and `[sink.<output>]` tables.

use std::path::Path;

use super::raw::{RawSink, RawSource};
use super::{FileFormat, LineFormat, StartingOffsets};
use super::{SinkSpec, SourceSpec};

pub(super) fn source(i: usize, s: RawSource, base: &Path) -> Result<SourceSpec, String> {
    let path = |p: &str| base.join(p);
    Ok(match s {
        RawSource::Log {
            path: p,
            topic,
            starting_offsets,
            max_records_per_trigger,
            max_bytes_per_trigger,
        } => SourceSpec::Log {
            root: path(&p),
            topic: plain_topic(topic, &format!("source {i}"))?,
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
            max_bytes_per_trigger: batch_bytes(
                max_bytes_per_trigger.as_deref(),
                &format!("source {i}"),
            )?,
        },
        RawSource::Files {
            path: p,
            format,
            max_files_per_trigger,
            max_bytes_per_trigger,
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
            max_bytes_per_trigger: batch_bytes(
                max_bytes_per_trigger.as_deref(),
                &format!("source {i}"),
            )?,
        },
        RawSource::Rate {
            rows_per_second,
            partitions,
            max_records_per_trigger,
        } => SourceSpec::Rate {
            rows_per_second: positive(Some(rows_per_second), i, "rows-per-second")?.unwrap_or(1),
            partitions: partitions.unwrap_or(1).max(1),
            max_records_per_trigger: positive(
                max_records_per_trigger,
                i,
                "max-records-per-trigger",
            )?,
        },
        RawSource::Kafka(k) => SourceSpec::Kafka(k.validate(&format!("source {i}"))?),
    })
}

/// Segments of at least 4 KiB (a record frame and its index fit many
/// times) and at most 1 GiB (the log's offsets into a segment are u32).
const SEGMENT_SIZES: std::ops::RangeInclusive<u64> = 4 << 10..=1 << 30;

/// The `segment-size` of a log sink that creates its topic.
fn segment_bytes(name: &str, size: Option<&str>) -> Result<u64, String> {
    let Some(size) = size else {
        return Ok(weir_log::SEGMENT_BYTES);
    };
    let bytes = super::units::parse_size(size)
        .map_err(|e| format!("sink.{name}.segment-size: {e}"))? as u64;
    if !SEGMENT_SIZES.contains(&bytes) {
        return Err(format!(
            "sink.{name}.segment-size: `{size}` is outside 4KiB..=1GiB"
        ));
    }
    Ok(bytes)
}

pub(super) fn sink(name: &str, s: RawSink, base: &Path) -> Result<SinkSpec, String> {
    let path = |p: &str| base.join(p);
    Ok(match s {
        RawSink::Log {
            path: p,
            topic,
            partitions,
            write,
            segment_size,
        } => SinkSpec::Log {
            root: path(&p),
            topic: plain_topic(topic, &format!("sink.{name}"))?,
            partitions: partitions.unwrap_or(1).max(1),
            segment_bytes: segment_bytes(name, segment_size.as_deref())?,
            as_produced: match write.as_deref().unwrap_or("at-commit") {
                "at-commit" => false,
                "as-produced" => true,
                w => {
                    return Err(format!(
                        "sink.{name}.write: `{w}` (use \"at-commit\" or \"as-produced\")"
                    ));
                }
            },
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
        RawSink::Console {} => SinkSpec::Console,
        RawSink::Kafka(k) => SinkSpec::Kafka(k.validate(&format!("sink.{name}"))?),
    })
}

/// The largest `max-bytes-per-trigger`: a batch's columns are addressed
/// with 32-bit offsets, and what a guest returns may be larger than what it
/// was given.
const MAX_BYTES_PER_TRIGGER: u64 = 1 << 30;

/// `max-bytes-per-trigger` of the source `at` ("source 2"): a size, by
/// default [`weir_connectors::DEFAULT_MAX_BYTES_PER_TRIGGER`].
pub(super) fn batch_bytes(v: Option<&str>, at: &str) -> Result<u64, String> {
    let Some(v) = v else {
        return Ok(weir_connectors::DEFAULT_MAX_BYTES_PER_TRIGGER);
    };
    match super::units::parse_size(v) {
        Ok(0) => Err(format!(
            "{at}: max-bytes-per-trigger must be at least 1 byte"
        )),
        Ok(n) if n as u64 > MAX_BYTES_PER_TRIGGER => Err(format!(
            "{at}: max-bytes-per-trigger is at most 1GiB (a batch's columns address at most 4 GiB)"
        )),
        Ok(n) => Ok(n as u64),
        Err(e) => Err(format!("{at}: max-bytes-per-trigger: {e}")),
    }
}

/// An embedded-log topic name, refused at parse time unless plain (the log
/// refuses it again when opened).
fn plain_topic(topic: String, at: &str) -> Result<String, String> {
    weir_log::check_topic_name(&topic).map_err(|e| format!("{at}: {e}"))?;
    Ok(topic)
}

fn positive(v: Option<u64>, source: usize, key: &str) -> Result<Option<u64>, String> {
    match v {
        Some(0) => Err(format!("source {source}: {key} must be at least 1")),
        v => Ok(v),
    }
}
