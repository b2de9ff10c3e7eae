//! A checkpoint's identity beyond its sources: the component and every
//! setting its state and results depend on, recorded in `metadata` when
//! the query is created and compared at every start. State written under
//! one key or partition count is unreadable under another, and a new
//! component or event-time rule changes what the state means, so a
//! restart that changes any of them is refused with the one thing that
//! changed, unless the user asks for an upgrade.

use serde::{Deserialize, Serialize};

use super::checkpoint::CheckpointError;
use super::state::StatefulOptions;

/// What a query's state and output depend on besides its input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// `sha256:<hex>` of the transform component; `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The transform keeps keyed state (and timers).
    pub stateful: bool,
    /// Stateful queries: how records are keyed, into how many partitions,
    /// and whether they are exchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_partitions: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<bool>,
    /// Event time: field, delay and late policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<String>,
    pub output_mode: String,
}

impl Settings {
    pub fn of(component: Option<String>, s: &StatefulOptions) -> Settings {
        let p = &s.partitioning;
        Settings {
            component,
            stateful: s.stateful,
            state_key: s.stateful.then(|| p.describe()),
            state_partitions: s.stateful.then_some(p.partitions),
            exchange: s.stateful.then_some(p.exchange),
            event_time: s.event_time.as_ref().map(|e| {
                format!(
                    "field {}{}, delay {}, late {}",
                    e.field.as_deref().unwrap_or("(record timestamp)"),
                    e.source_fields
                        .iter()
                        .map(|(i, f)| format!(" (source {i}: {f})"))
                        .collect::<String>(),
                    humantime::format_duration(e.delay),
                    match e.late {
                        super::state::LatePolicy::Drop => "drop",
                        super::state::LatePolicy::Reject => "reject",
                    }
                )
            }),
            watermark: s.event_time.as_ref().map(|e| e.rule.as_str().to_string()),
            output_mode: s.output_mode.as_str().to_string(),
        }
    }

    /// Settings no upgrade may change: state is laid out by them.
    fn fixed(&self) -> [(&'static str, String); 3] {
        let show = |v: Option<String>| v.unwrap_or_else(|| "(none)".into());
        [
            ("state key", show(self.state_key.clone())),
            (
                "state partitions",
                show(self.state_partitions.map(|p| p.to_string())),
            ),
            ("exchange", show(self.exchange.map(|e| e.to_string()))),
        ]
    }

    /// Settings an upgrade may change, keeping state and position.
    fn upgradable(&self) -> [(&'static str, String); 5] {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        [
            ("component", show(&self.component)),
            (
                "transform",
                if self.stateful {
                    "stateful"
                } else {
                    "stateless"
                }
                .into(),
            ),
            ("event time", show(&self.event_time)),
            ("watermark", show(&self.watermark)),
            ("output mode", self.output_mode.clone()),
        ]
    }
}

/// Compare the settings a checkpoint was written with (`old`; `None` for a
/// checkpoint from before they were recorded, `fresh` when it has no batch
/// yet) with the pipeline's. Returns whether `metadata` must be rewritten.
pub fn check(
    location: &str,
    old: Option<&Settings>,
    new: &Settings,
    fresh: bool,
    upgrade: bool,
) -> Result<bool, CheckpointError> {
    let refuse = |m: String| Err(CheckpointError::Mismatch(m));
    let Some(old) = old else {
        if new.stateful && !fresh {
            return refuse(format!(
                "checkpoint {location} holds state written before weir partitioned state by key; it cannot be read by this version (use a new checkpoint location)"
            ));
        }
        return Ok(true);
    };
    if old == new {
        return Ok(false);
    }
    let state_involved = old.stateful || new.stateful;
    if old.stateful && new.stateful {
        for ((name, was), (_, now)) in old.fixed().into_iter().zip(new.fixed()) {
            if was != now {
                return refuse(format!(
                    "checkpoint {location} was written with {name} = {was}, and this pipeline has {now}; state is partitioned by it, so it cannot change on restart (use a new checkpoint location)"
                ));
            }
        }
    }
    for ((name, was), (_, now)) in old.upgradable().into_iter().zip(new.upgradable()) {
        // A stateless query may take a new component freely: nothing in
        // its checkpoint depends on the code.
        if was != now && state_involved && !upgrade {
            return refuse(format!(
                "checkpoint {location} was written with {name} {was}, and this pipeline has {now}; restart with --upgrade to keep the checkpoint's state and position with the new {name}, or use a new checkpoint location (through weir serve: PUT the pipeline again with ?upgrade=true)"
            ));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stateful() -> Settings {
        Settings {
            component: Some("sha256:aa".into()),
            stateful: true,
            state_key: Some("field key".into()),
            state_partitions: Some(8),
            exchange: Some(true),
            event_time: Some("field ts, delay 1s, late drop".into()),
            watermark: Some("max-event-time".into()),
            output_mode: "append".into(),
        }
    }

    #[test]
    fn a_changed_setting_is_named_and_refused() {
        let old = stateful();
        assert!(!check("c", Some(&old), &old, false, false).unwrap());
        let mut new = old.clone();
        new.component = Some("sha256:bb".into());
        let err = check("c", Some(&old), &new, false, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("written with component sha256:aa, and this pipeline has sha256:bb; restart with --upgrade"),
            "{err}"
        );
        assert!(check("c", Some(&old), &new, false, true).unwrap());
        let mut new = old.clone();
        new.state_partitions = Some(4);
        for upgrade in [false, true] {
            let err = check("c", Some(&old), &new, false, upgrade)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("state partitions = 8, and this pipeline has 4"),
                "{err}"
            );
        }
        let mut new = old.clone();
        new.watermark = Some("slowest-partition".into());
        let err = check("c", Some(&old), &new, false, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("watermark max-event-time"), "{err}");
    }

    #[test]
    fn stateless_queries_take_new_components_and_old_state_is_refused() {
        let old = Settings {
            component: Some("sha256:aa".into()),
            output_mode: "append".into(),
            ..Settings::default()
        };
        let new = Settings {
            component: Some("sha256:bb".into()),
            ..old.clone()
        };
        assert!(check("c", Some(&old), &new, false, false).unwrap());
        let err = check("c", None, &stateful(), false, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("before weir partitioned state by key"),
            "{err}"
        );
        assert!(check("c", None, &stateful(), true, false).unwrap());
    }
}
