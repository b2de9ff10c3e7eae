//! The `weir` command's own parts that its benches share: how the process
//! allocates ([`allocator`]) and how guests are built from source in every
//! SDK language ([`build`]). The runtime itself is a set of library crates:
//!
//! - `weir-engine`: batches and the Transform / Source / Sink / checkpoint
//!   seams, micro-batch, continuous and group execution, the write-ahead
//!   logs, keyed state, event time and the key exchange. It depends on
//!   neither wasmtime, a connector library, tokio nor an HTTP stack, and
//!   `cargo tree -p weir-engine` shows it.
//! - `weir-log`: the embedded log.
//! - `weir-runtime`: WASM components (wasmtime) as engine transforms, with
//!   limits, sandboxing and tenants.
//! - `weir-connectors`: sources and sinks (embedded log, files, rate,
//!   console, Kafka) and checkpoints on object storage.
//! - `weir-pipeline`: pipeline files parsed and validated (`spec`), a
//!   runnable query built from one, and replay.
//! - `weir-serve`: `weir serve`, the multi-tenant service.

pub mod allocator;
pub mod build;
