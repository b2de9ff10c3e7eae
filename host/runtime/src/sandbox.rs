//! Capabilities a pipeline grants its guest on top of the empty default
//! sandbox: read-only directories, named environment variables and the
//! real wall clock. Without grants a guest sees no files, no environment
//! and a wall clock frozen at the Unix epoch (so its output cannot depend
//! on when it ran unless the pipeline says so).

use std::path::PathBuf;
use std::time::Duration;

use wasmtime_wasi::{FsPerms, HostWallClock, WasiCtxBuilder};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Host directory -> path the guest sees; always read-only.
    pub dirs: Vec<(PathBuf, String)>,
    /// Environment variables the guest sees (name, value).
    pub env: Vec<(String, String)>,
    /// The real wall clock instead of one frozen at the epoch.
    pub wall_clock: bool,
}

struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl Sandbox {
    /// Apply the grants to a WASI context under construction.
    pub(crate) fn apply(&self, b: &mut WasiCtxBuilder) -> Result<(), String> {
        for (host, guest) in &self.dirs {
            b.preopened_dir(host, guest, FsPerms::ReadOnly)
                .map_err(|e| format!("granting {} as {guest}: {e}", host.display()))?;
        }
        for (k, v) in &self.env {
            b.env(k, v);
        }
        if !self.wall_clock {
            b.wall_clock(FrozenClock);
        }
        Ok(())
    }
}

/// Whether granting a guest the host directories of `sandbox` would expose
/// the compile cache at `cache` (native code every pipeline runs): refused
/// when a granted directory contains the cache or lies inside it.
pub fn check_sandbox(sandbox: &Sandbox, cache: Option<&std::path::Path>) -> Result<(), String> {
    let Some(cache) = cache else {
        return Ok(());
    };
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let cache = real(cache);
    for (host, guest) in &sandbox.dirs {
        let host = real(host);
        if cache.starts_with(&host) || host.starts_with(&cache) {
            return Err(format!(
                "transform.sandbox.dirs: {} (as {guest}) would give the guest the compile cache {}, which holds the native code every pipeline runs; grant another directory",
                host.display(),
                cache.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod cache_grant_tests {
    #[test]
    fn the_compile_cache_is_never_granted_to_a_guest() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        std::fs::create_dir_all(cache.join("x")).unwrap();
        let with = |dir: std::path::PathBuf| super::Sandbox {
            dirs: vec![(dir, "/data".into())],
            ..Default::default()
        };
        for granted in [root.path().to_path_buf(), cache.clone(), cache.join("x")] {
            let err = super::check_sandbox(&with(granted), Some(&cache)).unwrap_err();
            assert!(
                err.contains("would give the guest the compile cache"),
                "{err}"
            );
        }
        let other = root.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        super::check_sandbox(&with(other), Some(&cache)).unwrap();
    }
}
