//! The disk map: an embedded redb database on local disk for state that
//! outgrows memory (`[state] backend = "disk"`).
//!
//! It is scratch space, not the checkpoint: durability still comes from the
//! versioned delta and snapshot files, and a restarted query rebuilds the
//! map from them. Writes go into one open redb transaction per version,
//! committed without fsync when the version is checkpointed, so redb's page
//! cache (64 MiB) bounds the memory used however large the state grows.

use std::cell::RefCell;
use std::ops::Bound;

use redb::{Durability, ReadableTable, TableDefinition};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("state");

/// redb's page cache for one partition.
const CACHE_BYTES: usize = 64 << 20;

pub(crate) struct DiskMap {
    db: redb::Database,
    /// Keys changed since the last version (unsorted, may repeat): sorted
    /// once when the delta is written.
    changed: Vec<Vec<u8>>,
    txn: Option<redb::WriteTransaction>,
    /// The first I/O error; it fails the call that hit it and the commit.
    error: RefCell<Option<String>>,
    _dir: tempfile::TempDir,
}

impl DiskMap {
    /// A map in a new directory under `scratch` (the system's temporary
    /// directory when `None`).
    pub(super) fn open(scratch: Option<&std::path::Path>) -> Result<DiskMap, String> {
        let dir =
            scratch_dir(scratch).map_err(|e| format!("creating the disk state directory: {e}"))?;
        let path = dir.path().join("state.redb");
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut m = DiskMap {
            db,
            changed: Vec::new(),
            txn: None,
            error: RefCell::new(None),
            _dir: dir,
        };
        m.begin(Durability::None);
        match m.error.take() {
            Some(e) => Err(e),
            None => Ok(m),
        }
    }

    fn fail(&self, e: impl std::fmt::Display) {
        let mut err = self.error.borrow_mut();
        if err.is_none() {
            *err = Some(format!("disk state store: {e}"));
        }
    }

    fn begin(&mut self, durability: Durability) {
        match self.db.begin_write() {
            Ok(mut t) => {
                if let Err(e) = t.set_durability(durability) {
                    self.fail(e);
                }
                self.txn = Some(t);
            }
            Err(e) => self.fail(e),
        }
    }

    fn table(&self) -> Option<redb::Table<'_, &'static [u8], &'static [u8]>> {
        let txn = self.txn.as_ref()?;
        match txn.open_table(TABLE) {
            Ok(t) => Some(t),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    pub(super) fn get(&self, k: &[u8]) -> Option<Vec<u8>> {
        let t = self.table()?;
        match t.get(k) {
            Ok(v) => v.map(|g| g.value().to_vec()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    pub(super) fn insert(&mut self, k: Vec<u8>, v: &[u8]) -> Option<Vec<u8>> {
        let r = self.put(&k, v);
        self.changed.push(k);
        r
    }

    fn put(&self, k: &[u8], v: &[u8]) -> Option<Vec<u8>> {
        let mut t = self.table()?;
        match t.insert(k, v) {
            Ok(old) => old.map(|g| g.value().to_vec()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    pub(super) fn remove(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        let old = self.delete(k);
        if old.is_some() {
            self.changed.push(k.to_vec());
        }
        old
    }

    fn delete(&self, k: &[u8]) -> Option<Vec<u8>> {
        let mut t = self.table()?;
        match t.remove(k) {
            Ok(old) => old.map(|g| g.value().to_vec()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// The version was checkpointed: commit the open transaction (with
    /// fsync when `durable`, which lets redb reuse freed pages) and open
    /// the next.
    pub(super) fn checkpointed(&mut self, durable: bool) {
        if let Some(mut t) = self.txn.take() {
            if durable && let Err(e) = t.set_durability(Durability::Immediate) {
                self.fail(e);
            }
            if let Err(e) = t.commit() {
                self.fail(e);
            }
        }
        self.begin(Durability::None);
    }

    /// The first I/O error, if any.
    pub(super) fn error(&self) -> Option<String> {
        self.error.borrow().clone()
    }

    /// Each key changed since the last version, sorted, once, with its
    /// value now (`None`: removed); and forget the changes.
    pub(super) fn drain_changes(&mut self, f: &mut super::ChangeSink<'_>) {
        let mut keys = std::mem::take(&mut self.changed);
        keys.sort_unstable();
        keys.dedup();
        for k in &keys {
            f(k, self.get(k).as_deref());
        }
    }

    pub(super) fn scan(
        &self,
        lo: Bound<&[u8]>,
        keep: &mut dyn FnMut(&[u8]) -> bool,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let Some(t) = self.table() else {
            return Vec::new();
        };
        let range = match t.range::<&[u8]>((lo, Bound::Unbounded)) {
            Ok(r) => r,
            Err(e) => {
                self.fail(e);
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for item in range {
            if out.len() >= limit {
                break;
            }
            match item {
                Ok((k, v)) => {
                    if !keep(k.value()) {
                        break;
                    }
                    out.push((k.value().to_vec(), v.value().to_vec()));
                }
                Err(e) => {
                    self.fail(e);
                    break;
                }
            }
        }
        out
    }
}

/// A disk map's directory under `scratch` (or the system's temporary
/// directory), named after this process (`weir-state-<pid>-`) so that a
/// later disk map there removes those of processes that died without
/// removing their own (a SIGKILL leaves a state-sized directory behind).
fn scratch_dir(scratch: Option<&std::path::Path>) -> std::io::Result<tempfile::TempDir> {
    let prefix = format!("weir-state-{}-", std::process::id());
    match scratch {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            sweep_dead(dir);
            tempfile::Builder::new().prefix(&prefix).tempdir_in(dir)
        }
        None => {
            static SWEPT: std::sync::Once = std::sync::Once::new();
            SWEPT.call_once(|| sweep_dead(&std::env::temp_dir()));
            tempfile::Builder::new().prefix(&prefix).tempdir()
        }
    }
}

/// Remove the disk map directories under `dir` whose process is gone.
/// Only where `/proc` tells which processes live.
fn sweep_dead(dir: &std::path::Path) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("weir-state-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            match std::fs::remove_dir_all(e.path()) {
                Ok(()) => tracing::info!(
                    "removed {}, the disk state of a process that is gone",
                    e.path().display()
                ),
                Err(err) => tracing::warn!("removing {}: {err}", e.path().display()),
            }
        }
    }
}

#[cfg(test)]
mod sweep_tests {
    #[test]
    fn the_disk_state_of_dead_processes_is_removed_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("weir-state-{}-abc", u32::MAX));
        let mine = tmp
            .path()
            .join(format!("weir-state-{}-def", std::process::id()));
        let unnamed = tmp.path().join("weir-state-Xy12ab");
        for d in [&dead, &mine, &unnamed] {
            std::fs::create_dir_all(d.join("inner")).unwrap();
        }
        super::sweep_dead(tmp.path());
        assert!(!dead.exists());
        assert!(mine.exists());
        assert!(unnamed.exists(), "no pid in the name: not ours to judge");
    }
}
