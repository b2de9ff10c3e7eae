//! Compile once: precompiled components are cached on disk, keyed by the
//! component's SHA-256 and the engine's compatibility hash, so a second start
//! loads machine code (milliseconds) instead of compiling (seconds
//! for a Python or JavaScript guest).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Whether a load compiled the component or reused a cached artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded precompiled code from the cache.
    Hit,
    /// Compiled and stored the artifact for next time.
    Miss,
    /// No cache directory: compiled in memory.
    Disabled,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn engine_key(engine: &Engine) -> String {
    // DefaultHasher is stable within one build of weir, which is all that
    // matters: a different build yields a different key and recompiles.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{:016x}", h.finish())
}

fn artifact_path(dir: &Path, content_hash: &str, engine: &Engine) -> PathBuf {
    dir.join(format!("{content_hash}-{}.cwasm", engine_key(engine)))
}

/// Compile `bytes`, or load the cached artifact for them.
pub(crate) fn load_or_compile(
    engine: &Engine,
    bytes: &[u8],
    content_hash: &str,
    cache_dir: Option<&Path>,
) -> wasmtime::Result<(Component, CacheOutcome, Duration)> {
    let start = Instant::now();
    let Some(dir) = cache_dir else {
        let c = Component::new(engine, bytes)?;
        return Ok((c, CacheOutcome::Disabled, start.elapsed()));
    };
    let path = artifact_path(dir, content_hash, engine);
    // Read into memory rather than mmap: a cache file replaced or truncated
    // while weir runs must not crash the process (SIGBUS on a mapped page).
    if let Ok(artifact) = std::fs::read(&path) {
        // SAFETY: the bytes come from `serialize` below, stored in weir's own
        // cache directory under a name derived from the content hash and the
        // engine settings; wasmtime re-checks the header and compatibility.
        match unsafe { Component::deserialize(engine, &artifact) } {
            Ok(c) => return Ok((c, CacheOutcome::Hit, start.elapsed())),
            Err(e) => {
                tracing::warn!(path = %path.display(), "discarding unusable cached artifact: {e:#}");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let component = Component::new(engine, bytes)?;
    if let Err(e) = store(dir, &path, &component) {
        tracing::warn!(path = %path.display(), "could not cache compiled component: {e}");
    }
    Ok((component, CacheOutcome::Miss, start.elapsed()))
}

fn store(dir: &Path, path: &Path, component: &Component) -> Result<(), String> {
    let bytes = component.serialize().map_err(|e| format!("{e:#}"))?;
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, &bytes)?;
        tmp.persist(path)?;
        Ok(())
    };
    write().map_err(|e| e.to_string())
}

/// The default cache directory: `$WEIR_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/weir/components`, else `~/.cache/weir/components`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("WEIR_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("weir").join("components"))
}
