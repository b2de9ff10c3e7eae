//! `[window]`: a windowed aggregation the host runs in place of a
//! component (see `weir_engine::window`), for pipelines whose stateful
//! step is a count, sum, min, max or average per key and window.

use serde::Deserialize;
use weir_engine::window::{Aggregation, WindowSpec};

use super::OnError;
use super::units::{parse_duration, parse_size};

/// A record falls in `size / slide` windows; more per record would let one
/// pipeline file multiply its state and CPU without bound.
pub const MAX_WINDOWS_PER_RECORD: i64 = 100;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawWindow {
    pub size: String,
    pub slide: Option<String>,
    pub aggregate: Option<String>,
    pub field: Option<String>,
    pub on_error: Option<String>,
    pub max_state: Option<String>,
}

/// The pipeline's host window and what becomes of a record it cannot
/// aggregate (a number missing at `field`).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowAggregation {
    pub spec: WindowSpec,
    pub on_error: OnError,
}

fn millis(key: &str, text: &str) -> Result<i64, String> {
    let d = parse_duration(text).map_err(|e| format!("window.{key}: {e}"))?;
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    if ms < 1 {
        return Err(format!(
            "window.{key}: `{text}` is shorter than a millisecond"
        ));
    }
    // Window bounds are event times in ms: keep their arithmetic in range.
    if ms > 100 * 365 * 86_400_000 {
        return Err(format!("window.{key}: `{text}` is longer than 100 years"));
    }
    Ok(ms)
}

pub fn window(w: RawWindow) -> Result<WindowAggregation, String> {
    let size_ms = millis("size", &w.size)?;
    let slide_ms = match &w.slide {
        Some(s) => millis("slide", s)?,
        None => size_ms,
    };
    if slide_ms > size_ms {
        return Err(format!(
            "window.slide ({slide_ms} ms) is longer than window.size ({size_ms} ms): records between windows would count nowhere"
        ));
    }
    let per_record = (size_ms + slide_ms - 1) / slide_ms;
    if per_record > MAX_WINDOWS_PER_RECORD {
        return Err(format!(
            "window.size / window.slide puts each record in {per_record} windows; at most {MAX_WINDOWS_PER_RECORD} are allowed"
        ));
    }
    let field = || -> Result<Vec<String>, String> {
        let f = w.field.as_deref().ok_or_else(|| {
            format!(
                "window.aggregate = \"{}\" needs window.field, the JSON field (dotted path) holding the number",
                w.aggregate.as_deref().unwrap_or_default()
            )
        })?;
        let path: Vec<String> = f.split('.').map(str::to_string).collect();
        if path.iter().any(String::is_empty) {
            return Err(format!("window.field: `{f}` is not a dotted field path"));
        }
        Ok(path)
    };
    let aggregate = match w.aggregate.as_deref().unwrap_or("count") {
        "count" => {
            if w.field.is_some() {
                return Err(
                    "window.field applies to sum, min, max and avg (a count counts records)".into(),
                );
            }
            Aggregation::Count
        }
        "sum" => Aggregation::Sum(field()?),
        "min" => Aggregation::Min(field()?),
        "max" => Aggregation::Max(field()?),
        "avg" => Aggregation::Avg(field()?),
        a => {
            return Err(format!(
                "window.aggregate: `{a}` (use \"count\", \"sum\", \"min\", \"max\" or \"avg\")"
            ));
        }
    };
    let on_error = OnError::parse("window", w.on_error.as_deref())?;
    let max_state_bytes = match &w.max_state {
        Some(v) => parse_size(v).map_err(|e| format!("window.max-state: {e}"))?,
        None => weir_runtime::Limits::default().max_state,
    };
    Ok(WindowAggregation {
        spec: WindowSpec {
            size_ms,
            slide_ms,
            aggregate,
            max_state_bytes,
        },
        on_error,
    })
}

/// A pipeline runs a component or a host window, not both (yet).
pub(super) fn check_alone(
    window: Option<&WindowAggregation>,
    transform: bool,
) -> Result<(), String> {
    if window.is_some() && transform {
        return Err(
            "a pipeline runs either a [transform] component or a [window] aggregation, not both"
                .into(),
        );
    }
    Ok(())
}

/// A window needs a state key, and a watermark to close its windows
/// (except in complete mode, which emits every window each batch).
pub(super) fn check_keyed(
    window: Option<&WindowAggregation>,
    keyed: bool,
    state: &weir_engine::state::StatefulOptions,
) -> Result<(), String> {
    if window.is_none() {
        return Ok(());
    }
    if !keyed {
        return Err("[window] aggregates per key: say which in [state] (key = \"record-key\" or key-field = \"<json.path>\")".into());
    }
    if state.event_time.is_none() && state.output_mode != weir_engine::state::OutputMode::Complete {
        return Err(format!(
            "[window] in {} mode needs an [event-time] section: windows close when the watermark passes them",
            state.output_mode.as_str()
        ));
    }
    Ok(())
}
