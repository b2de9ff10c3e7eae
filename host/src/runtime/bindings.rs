//! The one `bindgen!` of the host, kept private: the rest of the crate sees
//! only the curated names re-exported here.

mod generated {
    wasmtime::component::bindgen!({
        world: "transformer",
        path: "../wit",
    });
}

pub(crate) use generated::Transformer;
pub(crate) use generated::TransformerPre;
pub(crate) use generated::exports::weir::transform::transform::Guest;
pub(crate) use generated::weir::transform::log::{Host as LogHost, Level};
pub(crate) use generated::weir::transform::metrics::Host as MetricsHost;
pub(crate) use generated::weir::transform::types::Host as TypesHost;
pub(crate) use generated::weir::transform::types::{
    Header, OutputBatch, Position, Record, RecordError,
};

/// The interface a transform exports, with the version this host speaks.
pub const EXPORT_INTERFACE: &str = "weir:transform/transform@0.1.0";
/// The package and world guests are built against.
pub const PACKAGE: &str = "weir:transform@0.1.0";
pub const WORLD: &str = "transformer";
