//! Checks a binary before anything runs it: is it wasm, is it a component,
//! does it export the transform interface, does it import only what the
//! pipeline grants. Each failure is one line a user can act on.

use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::EXPORT_INTERFACE;

/// Interfaces every transform may import. The WASI ones back Rust's std and
/// other language runtimes; their context is empty (no preopened dirs, no
/// environment, no sockets, stdio captured), so importing them grants nothing.
const ALWAYS_GRANTED: &[&str] = &[
    "weir:transform/log",
    "weir:transform/metrics",
    "weir:transform/json",
    "weir:transform/types",
    "weir:transform/state",
    "weir:transform/timers",
    "weir:transform/context",
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
];

/// Why a binary cannot be used as a transform.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {err}")]
    Read { path: PathBuf, err: std::io::Error },
    #[error(
        "{path}: not a WebAssembly binary ({found}); build the transform with `cargo build --target wasm32-wasip2`"
    )]
    NotWasm { path: PathBuf, found: String },
    #[error(
        "{path}: is a core wasm module, not a component; build for wasm32-wasip2 (not wasm32-unknown-unknown or wasip1), or wrap it with `wasm-tools component new`"
    )]
    CoreModule { path: PathBuf },
    #[error("{path}: unsupported wasm binary version/layer {version:#010x}")]
    UnknownLayer { path: PathBuf, version: u32 },
    #[error("{path}: invalid component: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(
        "{path}: does not export `{EXPORT_INTERFACE}` (it exports: {found}); build it against the `transformer` world in wit/"
    )]
    MissingExport { path: PathBuf, found: String },
    #[error(
        "{path}: exports `{found}` but this weir speaks `{EXPORT_INTERFACE}` (contract 0.2 changed values, headers and errors); rebuild it against this weir's wit/ (`weir build`, or the current weir-guest SDK)"
    )]
    WrongVersion { path: PathBuf, found: String },
    #[error("{path}: `{EXPORT_INTERFACE}` does not match the transformer world: {message}")]
    WrongExports { path: PathBuf, message: String },
    #[error(
        "{path}: declares a linear memory of at least {declared} bytes, above this pipeline's limit of {limit} (transform.limits.memory)"
    )]
    MemoryTooLarge {
        path: PathBuf,
        declared: u64,
        limit: usize,
    },
    #[error("{path}: imports `{interface}`, which this pipeline does not grant")]
    NotGranted { path: PathBuf, interface: String },
    #[error("{path}: cannot link imports: {message}")]
    Link { path: PathBuf, message: String },
}

/// What a component imports and exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interfaces {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

/// Reject non-wasm and core modules from the 8-byte header.
pub(crate) fn check_header(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        let head = &bytes[..bytes.len().min(16)];
        let found = if bytes.is_empty() {
            "the file is empty".to_string()
        } else if head
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
        {
            format!(
                "it starts with the text {:?}",
                String::from_utf8_lossy(head)
            )
        } else {
            format!(
                "it starts with bytes {}",
                hex::encode(&head[..head.len().min(8)])
            )
        };
        return Err(LoadError::NotWasm {
            path: path.into(),
            found,
        });
    }
    let version = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
    match version {
        0x0000_0001 => Err(LoadError::CoreModule { path: path.into() }),
        0x0001_000d => Ok(()),
        v => Err(LoadError::UnknownLayer {
            path: path.into(),
            version: v,
        }),
    }
}

/// A grant names one interface (`wasi:sockets/tcp`) or a whole package
/// (`wasi:sockets`).
fn grant_covers(grant: &str, interface: &str) -> bool {
    grant == interface
        || interface
            .strip_prefix(grant)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The largest initial size of any linear memory the component's core
/// modules define: what one instance needs before running a single
/// instruction. (Imported memories are defined elsewhere and not counted.)
pub(crate) fn declared_min_memory(bytes: &[u8]) -> u64 {
    let mut max = 0u64;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let Ok(wasmparser::Payload::MemorySection(reader)) = payload {
            for m in reader.into_iter().flatten() {
                let page = 1u64 << m.page_size_log2.unwrap_or(16);
                max = max.max(m.initial.saturating_mul(page));
            }
        }
    }
    max
}

/// Strip the `@version` from an interface name.
pub(crate) fn unversioned(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

pub(crate) fn interfaces(engine: &Engine, component: &Component) -> Interfaces {
    let ty = component.component_type();
    Interfaces {
        imports: ty.imports(engine).map(|(n, _)| n.to_string()).collect(),
        exports: ty.exports(engine).map(|(n, _)| n.to_string()).collect(),
    }
}

/// Check exports and imports by name; exact function types are checked when
/// the instance-pre is built.
pub(crate) fn check_interfaces(
    path: &Path,
    found: &Interfaces,
    extra_grants: &[String],
) -> Result<(), LoadError> {
    if !found.exports.iter().any(|e| e == EXPORT_INTERFACE) {
        let base = unversioned(EXPORT_INTERFACE);
        if let Some(other) = found.exports.iter().find(|e| unversioned(e) == base) {
            return Err(LoadError::WrongVersion {
                path: path.into(),
                found: other.clone(),
            });
        }
        let list = if found.exports.is_empty() {
            "nothing".to_string()
        } else {
            found.exports.join(", ")
        };
        return Err(LoadError::MissingExport {
            path: path.into(),
            found: list,
        });
    }
    for import in &found.imports {
        let name = unversioned(import);
        let granted = ALWAYS_GRANTED.contains(&name)
            || extra_grants
                .iter()
                .any(|g| grant_covers(unversioned(g), name));
        if !granted {
            return Err(LoadError::NotGranted {
                path: path.into(),
                interface: import.clone(),
            });
        }
    }
    Ok(())
}
