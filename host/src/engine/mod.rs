//! The engine core: batches, transforms and (later) sources, sinks and
//! checkpoints. It imports neither wasmtime nor any connector library, so it
//! runs native transforms as well as WASM ones.

pub mod batch;
pub mod output;
pub mod transform;

pub use batch::{EncodingError, RecordBatch, RecordRef};
pub use output::{OutputBatch, OutputRef, Rejected, TransformOutput};
pub use transform::{FnTransform, Transform, TransformError};
