//! Where a state partition's entries live: an ordered map in memory (the
//! default, fastest), or an embedded redb database on local disk for state
//! that outgrows memory (`[state] backend = "disk"`).
//!
//! The disk map is scratch space, not the checkpoint: durability still
//! comes from the versioned delta and snapshot files, and a restarted query
//! rebuilds the map from them. Writes go into one open redb transaction per
//! version, committed without fsync when the version is checkpointed, so
//! redb's page cache (64 MiB) bounds the memory used however large the
//! state grows.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;

use redb::{Durability, ReadableTable, TableDefinition};

/// Which map holds a partition's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StateBackend {
    #[default]
    Memory,
    /// redb in a temporary directory (`$TMPDIR`), removed when the task ends.
    Disk,
}

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("state");

/// redb's page cache for one partition.
const CACHE_BYTES: usize = 64 << 20;

pub(crate) enum Map {
    Memory(BTreeMap<Vec<u8>, Vec<u8>>),
    Disk(Box<DiskMap>),
}

impl Default for Map {
    fn default() -> Self {
        Map::Memory(BTreeMap::new())
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Map::Memory(m) => write!(f, "Memory({} entries)", m.len()),
            Map::Disk(_) => f.write_str("Disk"),
        }
    }
}

pub(crate) struct DiskMap {
    db: redb::Database,
    txn: Option<redb::WriteTransaction>,
    /// The first I/O error; it fails the call that hit it and the commit.
    error: RefCell<Option<String>>,
    _dir: tempfile::TempDir,
}

impl DiskMap {
    fn open() -> Result<DiskMap, String> {
        let dir = scratch_dir().map_err(|e| format!("creating the disk state directory: {e}"))?;
        let path = dir.path().join("state.redb");
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut m = DiskMap {
            db,
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

    fn get(&self, k: &[u8]) -> Option<Vec<u8>> {
        let t = self.table()?;
        match t.get(k) {
            Ok(v) => v.map(|g| g.value().to_vec()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    fn insert(&self, k: &[u8], v: &[u8]) -> Option<Vec<u8>> {
        let mut t = self.table()?;
        match t.insert(k, v) {
            Ok(old) => old.map(|g| g.value().to_vec()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    fn remove(&self, k: &[u8]) -> Option<Vec<u8>> {
        let mut t = self.table()?;
        match t.remove(k) {
            Ok(old) => old.map(|g| g.value().to_vec()),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    fn scan(
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

impl Map {
    pub(crate) fn new(backend: StateBackend) -> Result<Map, String> {
        Ok(match backend {
            StateBackend::Memory => Map::default(),
            StateBackend::Disk => Map::Disk(Box::new(DiskMap::open()?)),
        })
    }

    pub(crate) fn get(&self, k: &[u8]) -> Option<Cow<'_, [u8]>> {
        match self {
            Map::Memory(m) => m.get(k).map(|v| Cow::Borrowed(v.as_slice())),
            Map::Disk(d) => d.get(k).map(Cow::Owned),
        }
    }

    pub(crate) fn contains(&self, k: &[u8]) -> bool {
        self.get(k).is_some()
    }

    pub(crate) fn insert(&mut self, k: Vec<u8>, v: Vec<u8>) -> Option<Vec<u8>> {
        match self {
            Map::Memory(m) => m.insert(k, v),
            Map::Disk(d) => d.insert(&k, &v),
        }
    }

    pub(crate) fn remove(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        match self {
            Map::Memory(m) => m.remove(k),
            Map::Disk(d) => d.remove(k),
        }
    }

    /// Entries from `lo` on in key order, while `keep(key)`, at most `limit`.
    pub(crate) fn scan(
        &self,
        lo: Bound<&[u8]>,
        mut keep: impl FnMut(&[u8]) -> bool,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        match self {
            Map::Memory(m) => m
                .range::<[u8], _>((lo, Bound::Unbounded))
                .take_while(|(k, _)| keep(k))
                .take(limit)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            Map::Disk(d) => d.scan(lo, &mut keep, limit),
        }
    }

    /// Call `f` with every entry in key order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&[u8], &[u8])) {
        match self {
            Map::Memory(m) => m.iter().for_each(|(k, v)| f(k, v)),
            Map::Disk(d) => {
                let mut from: Option<Vec<u8>> = None;
                loop {
                    let lo = from.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                    let page = d.scan(lo, &mut |_| true, 4096);
                    for (k, v) in &page {
                        f(k, v);
                    }
                    match page.last() {
                        Some((k, _)) if page.len() == 4096 => from = Some(k.clone()),
                        _ => return,
                    }
                }
            }
        }
    }

    /// The version was checkpointed: a disk map commits its transaction
    /// (with fsync when `durable`, which lets redb reuse freed pages).
    pub(crate) fn checkpointed(&mut self, durable: bool) {
        if let Map::Disk(d) = self {
            if let Some(mut t) = d.txn.take() {
                if durable && let Err(e) = t.set_durability(Durability::Immediate) {
                    d.fail(e);
                }
                if let Err(e) = t.commit() {
                    d.fail(e);
                }
            }
            d.begin(Durability::None);
        }
    }

    /// The first I/O error of a disk map, if any.
    pub(crate) fn error(&self) -> Option<String> {
        match self {
            Map::Memory(_) => None,
            Map::Disk(d) => d.error.borrow().clone(),
        }
    }
}

/// A disk map's directory, named after this process (`weir-state-<pid>-`)
/// so that the first disk map of a later process removes those of
/// processes that died without removing their own (a SIGKILL leaves a
/// state-sized directory behind).
fn scratch_dir() -> std::io::Result<tempfile::TempDir> {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep_dead(&std::env::temp_dir()));
    tempfile::Builder::new()
        .prefix(&format!("weir-state-{}-", std::process::id()))
        .tempdir()
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
