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
