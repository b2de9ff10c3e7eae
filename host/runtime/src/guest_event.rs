//! Guests' log lines and prints as tracing events: every one has the target
//! [`GUEST_LOG_TARGET`] and a `guest` field naming the instance
//! (`<tenant>/<pipeline>/<task>` under a tenant), so log layers can route
//! them to their tenant or pipeline.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};

/// The tracing target of every guest line (`WEIR_LOG=weir::guest=debug`).
pub const GUEST_LOG_TARGET: &str = "weir::guest";

/// The fields of a guest event (target [`GUEST_LOG_TARGET`]), as the
/// service's per-pipeline logs and `weir host`'s tenant logs read them.
#[derive(Default)]
pub struct GuestEvent {
    pub guest: Option<String>,
    pub stream: Option<String>,
    /// The message, then any other fields as ` name=value`.
    pub text: String,
}

impl GuestEvent {
    pub fn of(event: &tracing::Event<'_>) -> GuestEvent {
        let mut f = GuestEvent::default();
        event.record(&mut f);
        f
    }
}

impl Visit for GuestEvent {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "guest" => self.guest = Some(value.to_string()),
            "stream" => self.stream = Some(value.to_string()),
            _ => self.record_debug(field, &value),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "guest" => self.guest = Some(format!("{value:?}")),
            "stream" => self.stream = Some(format!("{value:?}")),
            "message" => {
                let rest = std::mem::take(&mut self.text);
                let _ = write!(self.text, "{value:?}{rest}");
            }
            name => {
                let _ = write!(self.text, " {name}={value:?}");
            }
        }
    }
}
