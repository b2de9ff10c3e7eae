//! Validation of `output-mode`, `[event-time]` and `[state]`.

use super::raw::{RawEventTime, RawState};
use super::units::parse_duration;
use crate::engine::state::{
    EventTimeOptions, LatePolicy, OutputMode, StateBackend, StateFileOptions, StatefulOptions,
};

pub(super) fn options(
    output_mode: Option<String>,
    event_time: Option<RawEventTime>,
    state: Option<RawState>,
) -> Result<StatefulOptions, String> {
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
                delay: parse_duration(e.delay.as_deref().unwrap_or("0s"))
                    .map_err(|err| format!("event-time.delay: {err}"))?,
                idle_timeout: e
                    .idle_timeout
                    .as_deref()
                    .map(parse_duration)
                    .transpose()
                    .map_err(|err| format!("event-time.idle-timeout: {err}"))?,
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
    let mut files = StateFileOptions::default();
    if let Some(s) = state {
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
    Ok(StatefulOptions {
        stateful: false,
        event_time,
        output_mode,
        files,
    })
}
