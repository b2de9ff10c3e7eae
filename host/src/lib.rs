//! weir: a WebAssembly-hosted stream transform runtime.
//!
//! - [`engine`]: batches and the Transform / Source / Sink / checkpoint
//!   seams, micro-batch and continuous execution, the write-ahead logs,
//!   keyed state, event time and the key exchange; it imports neither
//!   wasmtime, a connector library nor an HTTP stack.
//! - [`runtime`]: runs WASM components (wasmtime) as engine transforms, with
//!   limits, sandboxing and tenants.
//! - [`connectors`]: sources and sinks (embedded log, files, rate, console,
//!   Kafka).
//! - [`log`]: the embedded log.
//! - [`spec`]: pipeline and host files, parsed and validated.
//! - [`pipeline`]: a runnable query built from a spec (what `weir run`,
//!   `weir host` and `weir serve` start).
//! - [`replay`]: a candidate component run over committed batches and
//!   compared with what the live pipeline committed.

pub mod allocator;
pub mod build;
pub mod checkpoints;
pub mod connectors;
pub mod engine;
pub mod log;
pub mod pipeline;
pub mod replay;
pub mod runtime;
pub mod serve;
pub mod spec;
