//! A file system that loses power on command, for crash tests that a
//! SIGKILL cannot stand in for (the kernel keeps every written byte through
//! a SIGKILL, synced or not). Mounted with FUSE by the test process itself;
//! weir runs on it as on any directory; [`PowerMount::cut_power`] drops
//! everything not fsynced (see [`model`]) once the processes writing to it
//! are dead. The kernel's caches are kept out of the way: entries and
//! attributes are never cached, and a file's pages are dropped at every
//! open, so what a restarted process reads is what the model holds.

mod fs;
pub mod model;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuser::MountOption;

use model::Model;

/// Entries and attributes are looked up again every time.
const TTL: Duration = Duration::ZERO;

/// The shared state: the model, and the power cut each open file handle
/// was opened after (a request of a killed process that reaches the file
/// system after the cut must not write into the restarted system).
struct Shared {
    model: Model,
    handles: std::collections::HashMap<u64, u64>,
    next_handle: u64,
}

struct PowerFs(Arc<Mutex<Shared>>);

/// A mounted power-loss file system; unmounted on drop.
pub struct PowerMount {
    shared: Arc<Mutex<Shared>>,
    path: PathBuf,
    _session: fuser::BackgroundSession,
}

impl PowerMount {
    /// Mount an empty file system at `path` (an existing directory).
    pub fn mount(path: &Path) -> std::io::Result<PowerMount> {
        let shared = Arc::new(Mutex::new(Shared {
            model: Model::new(),
            handles: Default::default(),
            next_handle: 1,
        }));
        let options = [MountOption::FSName("weir-powerfs".into()), MountOption::RW];
        let session = fuser::spawn_mount2(PowerFs(shared.clone()), path, &options)?;
        Ok(PowerMount {
            shared,
            path: path.to_path_buf(),
            _session: session,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lose power: everything not fsynced is gone. Kill (and reap) every
    /// process using the file system first, as a power cut would.
    pub fn cut_power(&self) {
        let mut s = self.shared.lock().unwrap();
        s.model.cut_power();
        s.handles.clear();
    }

    /// Lose power after the kernel wrote back a random share of what was
    /// not synced (see [`Model::cut_power_after_writeback`]); `seed` picks
    /// which.
    pub fn cut_power_after_writeback(&self, seed: u64) {
        let mut next = crate::xorshift(seed | 1);
        let mut coin = move || next() & 1 == 1;
        let mut s = self.shared.lock().unwrap();
        s.model.cut_power_after_writeback(&mut coin);
        s.handles.clear();
    }

    /// Make everything written so far durable (sync(2)).
    pub fn sync_all(&self) {
        self.shared.lock().unwrap().model.sync_all();
    }

    /// Power cuts so far.
    pub fn cuts(&self) -> u64 {
        self.shared.lock().unwrap().model.cuts
    }
}

impl Shared {
    fn open_handle(&mut self) -> u64 {
        let fh = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(fh, self.model.cuts);
        fh
    }

    /// Whether `fh` was opened since the last power cut.
    fn current(&self, fh: u64) -> bool {
        self.handles.get(&fh) == Some(&self.model.cuts)
    }
}
