//! Validation of `output-mode`, `[event-time]` and `[state]`.

use super::raw::{RawEventTime, RawState};
use super::units::parse_duration;
use weir_engine::exchange::{DEFAULT_STATE_PARTITIONS, Partitioning, StateKey};
use weir_engine::state::{
    EventTimeOptions, LatePolicy, OutputMode, StateBackend, StateFileOptions, StatefulOptions,
    WatermarkRule,
};

/// Most state partitions a pipeline may ask for (each is a guest instance).
const MAX_STATE_PARTITIONS: u32 = 1024;

/// The validated `output-mode`, `[event-time]` and `[state]`, and how state
/// is keyed (`None` when the pipeline does not say; a stateful transform
/// needs it).
pub(super) fn options(
    output_mode: Option<String>,
    event_time: Option<RawEventTime>,
    state: Option<RawState>,
    continuous: bool,
    sources: &super::sources::Sources,
) -> Result<(StatefulOptions, Option<Partitioning>), String> {
    // Micro-batch takes Spark's rule: each batch takes every partition's
    // share. Continuous readers run independently and drift apart, so
    // there the slowest partition leads unless the pipeline says otherwise.
    let default_rule = if continuous {
        "slowest-partition"
    } else {
        "max-event-time"
    };
    let output_mode = match output_mode.as_deref().unwrap_or("append") {
        "append" => OutputMode::Append,
        "update" => OutputMode::Update,
        "complete" => OutputMode::Complete,
        m => {
            return Err(format!(
                "output-mode: `{m}` (use \"append\", \"update\" or \"complete\")"
            ));
        }
    };
    let event_time = event_time
        .map(|e| -> Result<_, String> {
            if e.field.as_deref() == Some("") {
                return Err("event-time.field must not be empty (leave it out to use the record timestamp)".into());
            }
            Ok(EventTimeOptions {
                field: e.field,
                source_fields: sources.event_time_fields.clone(),
                delay: parse_duration(e.delay.as_deref().unwrap_or("0s"))
                    .map_err(|err| format!("event-time.delay: {err}"))?,
                idle_timeout: e
                    .idle_timeout
                    .as_deref()
                    .map(parse_duration)
                    .transpose()
                    .map_err(|err| format!("event-time.idle-timeout: {err}"))?,
                rule: match e.watermark.as_deref().unwrap_or(default_rule) {
                    "max-event-time" => WatermarkRule::MaxEventTime,
                    "slowest-partition" => WatermarkRule::SlowestPartition,
                    w => {
                        return Err(format!(
                            "event-time.watermark: `{w}` (use \"max-event-time\", Spark's rule, or \"slowest-partition\" for partitioned logs)"
                        ));
                    }
                },
                late: match e.late.as_deref().unwrap_or("drop") {
                    "drop" => LatePolicy::Drop,
                    "reject" => LatePolicy::Reject,
                    l => {
                        return Err(format!(
                            "event-time.late: `{l}` (use \"drop\" to count and drop late records, or \"reject\" to apply transform.on-error)"
                        ));
                    }
                },
            })
        })
        .transpose()?;
    if event_time.is_none()
        && let Some(i) = sources.event_time_fields.keys().next()
    {
        return Err(format!(
            "source `{}`: event-time-field needs an [event-time] section (its delay and late policy apply to every source)",
            sources.names[*i]
        ));
    }
    let mut files = StateFileOptions::default();
    let mut partitioning = None;
    if let Some(s) = &state {
        partitioning = keying(s, sources)?;
        if let Some(n) = s.snapshot_interval {
            if n == 0 {
                return Err("state.snapshot-interval must be at least 1".into());
            }
            files.snapshot_interval = n;
        }
        files.backend = match s.backend.as_deref().unwrap_or("memory") {
            "memory" => StateBackend::Memory,
            "disk" => StateBackend::Disk,
            b => {
                return Err(format!(
                    "state.backend: `{b}` (use \"memory\", or \"disk\" for state larger than memory)"
                ));
            }
        };
    }
    if state.is_none() && !sources.keys.is_empty() {
        partitioning = keying(&RawState::default(), sources)?;
    }
    let options = StatefulOptions {
        stateful: false,
        source_names: sources.names.clone(),
        event_time,
        output_mode,
        files,
        partitioning: partitioning.clone().unwrap_or_default(),
        clock: weir_engine::Clock::system(),
    };
    Ok((options, partitioning))
}

/// `[state] key`, `key-field`, `partitions` and `exchange`, with the
/// sources' own `key-field`s.
fn keying(s: &RawState, sources: &super::sources::Sources) -> Result<Option<Partitioning>, String> {
    let key = match (s.key.as_deref(), s.key_field.as_deref()) {
        (Some(_), Some(_)) => {
            return Err("state: give either key = \"record-key\" or key-field, not both".into());
        }
        (Some("record-key"), None) => StateKey::RecordKey,
        (Some(k), None) => {
            return Err(format!(
                "state.key: `{k}` (use \"record-key\", or key-field = \"<json.path>\" to key by a field of the value)"
            ));
        }
        (None, Some(f)) => {
            super::sources::field_key(f).map_err(|e| format!("state.key-field: {e}"))?
        }
        (None, None) if !sources.keys.is_empty() => {
            // Every source must then name its own.
            if let Some(i) = (0..sources.names.len()).find(|i| !sources.keys.contains_key(i)) {
                return Err(format!(
                    "source `{}` has no state key: give it key-field, or give [state] key = \"record-key\" or key-field for the sources without their own",
                    sources.names[i]
                ));
            }
            sources.keys[&0].clone()
        }
        (None, None) => {
            if s.partitions.is_some() || s.exchange.is_some() {
                return Err(
                    "state.partitions and state.exchange need the state key: key = \"record-key\" or key-field = \"<json.path>\""
                        .into(),
                );
            }
            return Ok(None);
        }
    };
    let partitions = s.partitions.unwrap_or(DEFAULT_STATE_PARTITIONS);
    if !(1..=MAX_STATE_PARTITIONS).contains(&partitions) {
        return Err(format!(
            "state.partitions: {partitions} (use 1 to {MAX_STATE_PARTITIONS})"
        ));
    }
    let exchange = s.exchange.unwrap_or(true);
    if !exchange {
        if key != StateKey::RecordKey || !sources.keys.is_empty() {
            return Err("state.exchange = false needs key = \"record-key\": weir checks that every record's key belongs to its partition".into());
        }
        if s.partitions.is_none() {
            return Err(
                "state.exchange = false needs state.partitions = <the source's partition count>"
                    .into(),
            );
        }
    }
    Ok(Some(Partitioning {
        key,
        source_keys: sources.keys.clone(),
        partitions,
        exchange,
    }))
}
