//! weir: a WebAssembly-hosted stream transform runtime.
//!
//! - [`engine`]: batches, the transform seam, and (later) sources, sinks and
//!   checkpoints; it knows nothing about WebAssembly or Kafka.
//! - [`runtime`]: runs WASM components as engine transforms.

pub mod connectors;
pub mod engine;
pub mod log;
pub mod runtime;
pub mod spec;
