//! Compile once: precompiled components are cached on disk, keyed by the
//! component's SHA-256 and the engine's compatibility hash, so a second start
//! loads machine code (milliseconds) instead of compiling (seconds
//! for a Python or JavaScript guest).
//!
//! The cache is a trust boundary: its files are native code that weir maps
//! and runs for every pipeline and tenant, so whoever can write them can run
//! code in the host. weir therefore uses a cache directory only when it is
//! owned by the user weir runs as and writable by nobody else (it creates it
//! with mode 0700), loads only artifacts that are owned likewise and end
//! with the SHA-256 of their contents (a truncated or altered file is
//! discarded and recompiled), and refuses to grant a guest a directory that
//! contains the cache or lies inside it (see `Runtime::check_sandbox`).

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

/// Remove every cached artifact of the component with `content_hash` (for
/// any engine): it was refused, or deleted everywhere.
pub(crate) fn remove(dir: &Path, content_hash: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!("{content_hash}-");
    for e in entries.flatten() {
        if e.file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(&prefix))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
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
    if let Err(why) = private_dir(dir) {
        warn_untrusted(dir, &why);
        let c = Component::new(engine, bytes)?;
        return Ok((c, CacheOutcome::Disabled, start.elapsed()));
    }
    let path = artifact_path(dir, content_hash, engine);
    // Read into memory rather than mmap: a cache file replaced or truncated
    // while weir runs must not crash the process (SIGBUS on a mapped page).
    if let Some(artifact) = read_verified(&path) {
        // SAFETY: the bytes were written by `store` below into a directory
        // only this user can write, the file is this user's and not
        // writable by others, and its trailing SHA-256 matches its
        // contents; wasmtime re-checks the header and compatibility.
        match unsafe { Component::deserialize(engine, &artifact) } {
            Ok(c) => {
                touch(&path);
                return Ok((c, CacheOutcome::Hit, start.elapsed()));
            }
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
    evict(dir, MAX_CACHE_BYTES, &path);
    Ok((component, CacheOutcome::Miss, start.elapsed()))
}

/// The most bytes of compiled code the cache keeps: past it, the artifacts
/// used longest ago are removed (every upload a service accepts compiles,
/// so the cache would otherwise grow without end).
pub const MAX_CACHE_BYTES: u64 = 4 << 30;

/// Mark an artifact as just used (its modification time), so eviction
/// keeps it. Best effort: a reader without write access leaves it.
fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Remove the least recently used artifacts of `dir` until at most `max`
/// bytes remain, never `keep` (the one just stored).
fn evict(dir: &Path, max: u64, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut artifacts: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = artifacts.iter().map(|a| a.1).sum();
    artifacts.sort();
    for (_, len, path) in artifacts {
        if total <= max {
            break;
        }
        if path != keep && std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

/// Length of the SHA-256 that ends every artifact file.
const DIGEST: usize = 32;

/// A cached artifact's bytes, if the file is this user's, writable by no
/// one else, and its trailing SHA-256 matches.
fn read_verified(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || meta.mode() & 0o022 != 0 {
        tracing::warn!(path = %path.display(), "ignoring a cached artifact not owned by this user or writable by others");
        return None;
    }
    let mut data = std::fs::read(path).ok()?;
    if data.len() < DIGEST {
        return None;
    }
    let (artifact, digest) = data.split_at(data.len() - DIGEST);
    if Sha256::digest(artifact).as_slice() != digest {
        tracing::warn!(path = %path.display(), "discarding a cached artifact whose checksum does not match");
        return None;
    }
    data.truncate(data.len() - DIGEST);
    Some(data)
}

/// Whether `dir` is fit to hold native code: this user's and writable by
/// nobody else. Created (mode 0700) when missing.
fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create it: {e}"))?;
    }
    let meta = std::fs::metadata(dir).map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("it is owned by uid {}, not {me}", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "it is writable by others (mode {:o}); chmod go-w it",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// Say once per directory that the cache is not used, and why.
fn warn_untrusted(dir: &Path, why: &str) {
    static WARNED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !warned.iter().any(|d| d == dir) {
        warned.push(dir.to_path_buf());
        tracing::warn!(dir = %dir.display(), "not using the compile cache: {why}");
    }
}

fn store(dir: &Path, path: &Path, component: &Component) -> Result<(), String> {
    let mut bytes = component.serialize().map_err(|e| format!("{e:#}"))?;
    let digest = Sha256::digest(&bytes);
    bytes.extend_from_slice(&digest);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_removes_the_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = std::time::SystemTime::now();
        for (i, name) in ["old", "mid", "new"].iter().enumerate() {
            let p = dir.path().join(format!("{name}.cwasm"));
            std::fs::write(&p, vec![0u8; 100]).unwrap();
            let f = std::fs::File::options().append(true).open(&p).unwrap();
            f.set_modified(t0 - Duration::from_secs(100 - i as u64 * 10))
                .unwrap();
        }
        std::fs::write(dir.path().join("other.txt"), vec![0u8; 1000]).unwrap();
        // "old" was used again just now: "mid" goes first.
        touch(&dir.path().join("old.cwasm"));
        evict(dir.path(), 200, &dir.path().join("new.cwasm"));
        let left: Vec<bool> = ["old", "mid", "new"]
            .iter()
            .map(|n| dir.path().join(format!("{n}.cwasm")).exists())
            .collect();
        assert_eq!(left, [true, false, true]);
        assert!(dir.path().join("other.txt").exists());
    }
    use std::os::unix::fs::PermissionsExt;

    fn load(engine: &Engine, dir: &Path) -> CacheOutcome {
        let bytes = wat::parse_str("(component)").unwrap();
        let hash = sha256_hex(&bytes);
        load_or_compile(engine, &bytes, &hash, Some(dir)).unwrap().1
    }

    #[test]
    fn artifacts_are_verified_and_a_shared_cache_is_not_used() {
        let engine = Engine::default();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        assert_eq!(load(&engine, &dir), CacheOutcome::Miss);
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "created private");
        assert_eq!(load(&engine, &dir), CacheOutcome::Hit);
        // An altered artifact (same length) is discarded and recompiled.
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut bytes = std::fs::read(&file).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        std::fs::write(&file, &bytes).unwrap();
        assert_eq!(load(&engine, &dir), CacheOutcome::Miss);
        assert_eq!(load(&engine, &dir), CacheOutcome::Hit);
        // A cache others can write to is not trusted at all.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(load(&engine, &dir), CacheOutcome::Disabled);
    }
}
