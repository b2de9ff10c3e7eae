//! Validation of the `[transform]` table: component, call mode, error
//! policy, config, and the sandbox's limits.

use std::path::Path;

use super::raw::{RawLimits, RawSandbox, RawTransform};
use super::units::{flatten_config, parse_duration, parse_size};
use super::{OnError, TransformSpec};
use weir_engine::RecordLimits;
use weir_runtime::{CallMode, Limits, Sandbox};

/// Where `[transform.sandbox] env` takes its values from.
#[derive(Debug, Clone, Copy)]
pub enum GuestEnv<'a> {
    /// weir's own environment: whoever runs `weir run` runs its guests.
    Process,
    /// Only these variables (`weir serve`: those the admin set for the
    /// tenant), never the process's own.
    Only(&'a std::collections::BTreeMap<String, String>),
}

pub(super) fn transform(
    t: RawTransform,
    base: &Path,
    env: GuestEnv<'_>,
) -> Result<TransformSpec, String> {
    let GuestLimits {
        limits,
        record_limits,
    } = guest_limits(&t.limits)?;
    let mut config = Vec::new();
    for (k, v) in t.config {
        flatten_config(k, v, &mut config)?;
    }
    Ok(TransformSpec {
        component: base.join(&t.component),
        call: match t.call.as_deref().unwrap_or("batch") {
            "batch" => CallMode::Batch,
            "record" => CallMode::PerRecord,
            c => {
                return Err(format!(
                    "transform.call: `{c}` (use \"batch\" or \"record\")"
                ));
            }
        },
        on_error: OnError::parse("transform", t.on_error.as_deref())?,
        config,
        limits,
        record_limits,
        grants: t.grants,
        sandbox: sandbox(t.sandbox, base, env)?,
    })
}

fn sandbox(raw: RawSandbox, base: &Path, source: GuestEnv<'_>) -> Result<Sandbox, String> {
    let mut dirs = Vec::new();
    for (guest, host) in raw.dirs {
        let path = base.join(&host);
        if !path.is_dir() {
            return Err(format!(
                "transform.sandbox.dirs.\"{guest}\": `{}` is not a directory",
                path.display()
            ));
        }
        if !guest.starts_with('/') {
            return Err(format!(
                "transform.sandbox.dirs: the guest path `{guest}` must be absolute"
            ));
        }
        dirs.push((path, guest));
    }
    let mut env = Vec::new();
    for name in raw.env {
        let v = match source {
            GuestEnv::Process => std::env::var(&name).map_err(|_| {
                format!("transform.sandbox.env: `{name}` is not set in weir's environment")
            })?,
            GuestEnv::Only(allowed) => allowed.get(&name).cloned().ok_or_else(|| {
                format!(
                    "transform.sandbox.env: `{name}` is not one of this tenant's guest variables (the admin sets guest-env per tenant)"
                )
            })?,
        };
        env.push((name, v));
    }
    Ok(Sandbox {
        dirs,
        env,
        wall_clock: raw.wall_clock,
    })
}

/// A guest's sandbox limits and the host's per-record limits around it.
#[derive(Debug, Clone, Copy)]
pub struct GuestLimits {
    pub limits: Limits,
    pub record_limits: RecordLimits,
}

/// `--limit KEY=VALUE` pairs as a `[transform.limits]` table: numbers as
/// numbers (fuel, counts), the rest as text (sizes, durations).
pub fn limits_table(pairs: &[(String, String)]) -> toml::Table {
    pairs
        .iter()
        .map(|(k, v)| {
            let v = v
                .parse::<i64>()
                .map_or_else(|_| toml::Value::String(v.clone()), toml::Value::Integer);
            (k.clone(), v)
        })
        .collect()
}

/// The limits of `--limit KEY=VALUE` pairs, checked as a pipeline file's
/// `[transform.limits]` is (`weir transform`, which runs no pipeline).
pub fn limits_from_pairs(pairs: &[(String, String)]) -> Result<GuestLimits, String> {
    let raw: RawLimits = limits_table(pairs)
        .try_into()
        .map_err(|e: toml::de::Error| format!("--limit: {}", e.message()))?;
    guest_limits(&raw)
}

fn guest_limits(l: &RawLimits) -> Result<GuestLimits, String> {
    let size = |key: &str, v: &Option<String>, default: usize| -> Result<usize, String> {
        match v {
            None => Ok(default),
            Some(v) => parse_size(v).map_err(|e| format!("transform.limits.{key}: {e}")),
        }
    };
    let duration = |key: &str, v: &Option<String>, default| -> Result<_, String> {
        match v {
            None => Ok(default),
            Some(v) => parse_duration(v).map_err(|e| format!("transform.limits.{key}: {e}")),
        }
    };
    let d = Limits::default();
    let limits = Limits {
        max_memory: size("memory", &l.memory, d.max_memory)?,
        call_deadline: duration("call-timeout", &l.call_timeout, d.call_deadline)?,
        max_state: size("state", &l.state, d.max_state)?,
        fuel: l.fuel,
    };
    let r = RecordLimits::default();
    let record_limits = RecordLimits {
        max_record_bytes: size("max-record-size", &l.max_record_size, r.max_record_bytes)?,
        max_outputs_per_record: l.max_outputs_per_record.unwrap_or(r.max_outputs_per_record),
        max_output_bytes: size("max-output-bytes", &l.max_output_bytes, r.max_output_bytes)?,
        crash_loop_traps: l.crash_loop_traps.unwrap_or(r.crash_loop_traps),
        crash_window: duration("crash-window", &l.crash_window, r.crash_window)?,
    };
    for (key, v) in [
        ("memory", limits.max_memory),
        ("state", limits.max_state),
        ("max-record-size", record_limits.max_record_bytes),
        (
            "max-outputs-per-record",
            record_limits.max_outputs_per_record,
        ),
        ("max-output-bytes", record_limits.max_output_bytes),
        ("crash-loop-traps", record_limits.crash_loop_traps),
    ] {
        if v == 0 {
            return Err(format!("transform.limits.{key} must be at least 1"));
        }
    }
    if limits.fuel == Some(0) {
        return Err(
            "transform.limits.fuel must be at least 1 (leave it out for no fuel metering)".into(),
        );
    }
    if limits.call_deadline.is_zero() {
        return Err("transform.limits.call-timeout must be longer than zero".into());
    }
    Ok(GuestLimits {
        limits,
        record_limits,
    })
}
