//! The one `bindgen!` of the host, kept private: the rest of the crate sees
//! only the curated names re-exported here.

mod generated {
    wasmtime::component::bindgen!({
        world: "stateful-transformer",
        path: "../wit",
    });
}

pub(crate) use generated::StatefulTransformer;
pub(crate) use generated::exports::weir::transform::timer_handler::{
    FiredTimers as WitFiredTimers, Guest as TimerGuest, GuestIndices as TimerIndices,
};
pub(crate) use generated::exports::weir::transform::transform::{Guest, GuestIndices};
pub(crate) use generated::weir::transform::context::{
    Host as ContextHost, OutputMode as WitOutputMode,
};
pub(crate) use generated::weir::transform::log::{Host as LogHost, Level};
pub(crate) use generated::weir::transform::metrics::Host as MetricsHost;
pub(crate) use generated::weir::transform::state::{Entry, Host as StateHost};
pub(crate) use generated::weir::transform::timers::Host as TimersHost;
pub(crate) use generated::weir::transform::types::Host as TypesHost;
pub(crate) use generated::weir::transform::types::{
    Header, OutputBatch, Position, Record, RecordError, TimeDomain as WitTimeDomain,
};

/// The interface a transform exports, with the version this host speaks.
pub const EXPORT_INTERFACE: &str = "weir:transform/transform@0.1.0";
/// The interface a stateful transform exports besides `transform`.
pub const TIMER_INTERFACE: &str = "weir:transform/timer-handler@0.1.0";
/// Imports that make a component stateful.
pub const STATEFUL_IMPORTS: &[&str] = &[
    "weir:transform/state",
    "weir:transform/timers",
    "weir:transform/context",
];
/// The package and world guests are built against.
pub const PACKAGE: &str = "weir:transform@0.1.0";
pub const WORLD: &str = "transformer";
