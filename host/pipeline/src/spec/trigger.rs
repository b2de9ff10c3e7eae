//! `[trigger]`: when a micro-batch runs, and how an idle query waits.

use super::raw::{RawBackpressure, RawTrigger};
use super::units::parse_duration;
use weir_engine::{IdleWait, PidConfig, Trigger};

pub(super) fn trigger(t: &RawTrigger) -> Result<Trigger, String> {
    Ok(
        match (
            t.kind.as_deref().unwrap_or("default"),
            t.interval.as_deref(),
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
        },
    )
}

/// `[trigger]`'s idle waits, over their defaults; each above zero, and the
/// back-off's cap not below its start.
pub(super) fn idle_wait(t: &RawTrigger) -> Result<IdleWait, String> {
    let d = IdleWait::default();
    let get = |v: &Option<String>, key: &str, default| match v {
        None => Ok(default),
        Some(v) => match parse_duration(v) {
            Ok(x) if x.is_zero() => Err(format!("trigger.{key}: must be above zero")),
            Ok(x) => Ok(x),
            Err(e) => Err(format!("trigger.{key}: {e}")),
        },
    };
    let idle = IdleWait {
        poll: get(&t.idle_poll, "idle-poll", d.poll)?,
        max_poll: get(&t.max_idle_poll, "max-idle-poll", d.max_poll)?,
        wake: get(&t.wake_timeout, "wake-timeout", d.wake)?,
        retire: d.retire,
    };
    if idle.max_poll < idle.poll {
        return Err(format!(
            "trigger.max-idle-poll ({:?}) is below trigger.idle-poll ({:?})",
            idle.max_poll, idle.poll
        ));
    }
    Ok(idle)
}

/// `[backpressure]`: Spark Streaming's PID rate control, which sizes
/// batches to the processing-time trigger's interval.
pub(super) fn backpressure(
    b: RawBackpressure,
    trigger: Trigger,
) -> Result<Option<PidConfig>, String> {
    if b.enabled == Some(false) {
        return Ok(None);
    }
    if !matches!(trigger, Trigger::ProcessingTime(_)) {
        return Err(
            "backpressure sizes batches to the trigger interval: it needs [trigger] type = \"processing-time\""
                .into(),
        );
    }
    let d = PidConfig::default();
    let c = PidConfig {
        proportional: b.proportional.unwrap_or(d.proportional),
        integral: b.integral.unwrap_or(d.integral),
        derivative: b.derivative.unwrap_or(d.derivative),
        min_rate: b.min_rate.unwrap_or(d.min_rate),
        initial_rate: b.initial_rate,
    };
    for (k, v) in [
        ("proportional", c.proportional),
        ("integral", c.integral),
        ("derivative", c.derivative),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(format!(
                "backpressure.{k}: {v} must be a non-negative number"
            ));
        }
    }
    if !(c.min_rate > 0.0 && c.min_rate.is_finite()) {
        return Err(format!(
            "backpressure.min-rate: {} must be positive",
            c.min_rate
        ));
    }
    if c.initial_rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
        return Err("backpressure.initial-rate must be positive".into());
    }
    Ok(Some(c))
}
