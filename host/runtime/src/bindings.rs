//! The one `bindgen!` of the host, kept private: the rest of the crate sees
//! only the curated names re-exported here.

mod generated {
    wasmtime::component::bindgen!({
        world: "full-transformer",
        path: "../../wit",
    });
}

pub(crate) use generated::FullTransformer;
pub(crate) use generated::exports::weir::transform::record_transform::{
    Guest as RecordGuest, GuestIndices as RecordIndices,
};
pub(crate) use generated::exports::weir::transform::timer_handler::{
    FiredTimers as WitFiredTimers, Guest as TimerGuest, GuestIndices as TimerIndices,
};
pub(crate) use generated::exports::weir::transform::transform::GuestIndices;
pub(crate) use generated::weir::transform::context::{
    Host as ContextHost, KeyColumn, OutputMode as WitOutputMode,
};
pub(crate) use generated::weir::transform::json::{Host as JsonHost, NumberColumn as JsonNumbers};
pub(crate) use generated::weir::transform::log::{Host as LogHost, Level};
pub(crate) use generated::weir::transform::metrics::Host as MetricsHost;
pub(crate) use generated::weir::transform::state::{Entry, Host as StateHost, KeyRange};
pub(crate) use generated::weir::transform::timers::{Expiry, Host as TimersHost};
#[cfg(test)]
pub(crate) use generated::weir::transform::types::BadRecord;
pub(crate) use generated::weir::transform::types::Host as TypesHost;
pub(crate) use generated::weir::transform::types::{
    BatchError, Header, OutputBatch, Position, Record, RecordError, TimeDomain as WitTimeDomain,
};

/// The interface a transform exports, with the version this host speaks;
/// components built against another version are refused at load.
pub const EXPORT_INTERFACE: &str = "weir:transform/transform@0.2.0";
/// The optional per-record export (`call = "record"`).
pub const RECORD_INTERFACE: &str = "weir:transform/record-transform@0.2.0";
/// The interface a stateful transform exports besides `transform`.
pub const TIMER_INTERFACE: &str = "weir:transform/timer-handler@0.2.0";
/// Imports that make a component stateful.
pub const STATEFUL_IMPORTS: &[&str] = &[
    "weir:transform/state",
    "weir:transform/timers",
    "weir:transform/context",
];
/// The package and world guests are built against.
pub const PACKAGE: &str = "weir:transform@0.2.0";
pub const WORLD: &str = "transformer";
