//! Versioned persistence of one state partition, Spark's HDFS-backed state
//! store design: version v is the state after batch (or epoch) v-1. Each
//! version is written as a delta (the keys that changed) or, every
//! `snapshot-interval` versions and for a partition's first version, as a
//! full snapshot:
//!
//! ```text
//! state/<operator>/<partition>/snapshots/<v>
//! state/<operator>/<partition>/deltas/<v>
//! ```
//!
//! Loading version v reads the newest snapshot at or below v and applies
//! the deltas after it, each of which must exist. Files carry a CRC, so a
//! torn or altered file is reported by name instead of loaded.

use super::keyed::{KeyedState, known_namespace};
use super::map::Change;
use super::map::StateBackend;
use crate::checkpoint::{CheckpointError, CheckpointStore};

/// Version 2 added the expiry namespaces and range removals; a version-1
/// file is read the same way, while a weir that knows only version 1
/// refuses a version-2 file instead of misreading it.
const MAGIC: &[u8; 8] = b"WEIRST2\0";
const MAGIC_V1: &[u8; 8] = b"WEIRST1\0";

/// Entry tags: a key removed, a key and its value, and (version 2) a range
/// removal: every key of the key's namespace up to and including it.
const REMOVE: u8 = 0;
const PUT: u8 = 1;
const REMOVE_THROUGH: u8 = 2;
const DELTA: u8 = b'D';
const SNAPSHOT: u8 = b'S';

/// How state versions are written and kept, and where the live state is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateFileOptions {
    /// Write a snapshot instead of a delta every this many versions.
    pub snapshot_interval: u64,
    /// Versions that must stay loadable (the checkpoint log's retention).
    pub keep_versions: u64,
    pub backend: StateBackend,
    /// Every file is written once and never replaced (group mode, where
    /// each owner of a partition writes under a directory of its own and a
    /// second writer of a name is a fault to report, never to overwrite).
    pub write_once: bool,
}

impl Default for StateFileOptions {
    fn default() -> Self {
        StateFileOptions {
            snapshot_interval: 10,
            keep_versions: 100,
            backend: StateBackend::Memory,
            write_once: false,
        }
    }
}

/// One state partition: its in-memory state at `version` and where it lives.
#[derive(Debug)]
pub struct StatePartition {
    pub dir: String,
    pub state: KeyedState,
    pub version: u64,
    /// Snapshot versions on disk, ascending.
    snapshots: Vec<u64>,
    /// The last delta's or snapshot's bytes, kept for the next one: a
    /// batch's delta is about as large as the last, and a fresh buffer of
    /// that size costs its growth copies and its pages' first touch.
    buffer: Vec<u8>,
}

fn kind_dir(dir: &str, kind: u8) -> String {
    let sub = if kind == SNAPSHOT {
        "snapshots"
    } else {
        "deltas"
    };
    format!("{dir}/{sub}")
}

fn path(dir: &str, kind: u8, v: u64) -> String {
    format!("{}/{v}", kind_dir(dir, kind))
}

fn corrupt(store: &dyn CheckpointStore, path: &str, problem: impl Into<String>) -> CheckpointError {
    CheckpointError::Corrupt {
        path: format!("{}/{path}", store.location()),
        problem: problem.into(),
    }
}

impl StatePartition {
    /// Load version `version` of the partition in `dir`. Files of later
    /// versions, left by a run that crashed before committing them, are
    /// ignored: a re-run overwrites each version it commits (see `commit`).
    pub fn load(
        store: &dyn CheckpointStore,
        dir: &str,
        version: u64,
        backend: StateBackend,
    ) -> Result<Self, CheckpointError> {
        let mut snapshots = store.list_numbered(&format!("{dir}/snapshots"))?;
        let deltas = store.list_numbered(&format!("{dir}/deltas"))?;
        snapshots.retain(|&v| v <= version);
        let scratch = store.scratch_dir();
        let mut state =
            KeyedState::new_in(backend, scratch.as_deref()).map_err(CheckpointError::Mismatch)?;
        match snapshots.last() {
            None => {
                // A partition's first version is always a snapshot: deltas
                // without one mean the snapshot was lost.
                if let Some(&d) = deltas.iter().find(|&&d| d <= version) {
                    return Err(corrupt(
                        store,
                        &format!("{dir}/snapshots"),
                        format!(
                            "no snapshot at or below version {version}, but deltas/{d} exists: the state's base snapshot is missing"
                        ),
                    ));
                }
            }
            Some(&base) => {
                read_into(
                    store,
                    &path(dir, SNAPSHOT, base),
                    SNAPSHOT,
                    base,
                    &mut state,
                )?;
                for v in base + 1..=version {
                    let p = path(dir, DELTA, v);
                    if !deltas.contains(&v) {
                        return Err(corrupt(
                            store,
                            &p,
                            format!("missing: needed to load state version {version} of {dir}"),
                        ));
                    }
                    read_into(store, &p, DELTA, v, &mut state)?;
                }
            }
        }
        // Loading is no change: the next delta starts from here.
        state.drain_delta(|_| {});
        state.checkpointed(true);
        if let Some(e) = state.error() {
            return Err(CheckpointError::Mismatch(format!("loading {dir}: {e}")));
        }
        Ok(StatePartition {
            dir: dir.to_string(),
            state,
            version,
            snapshots,
            buffer: Vec::new(),
        })
    }

    /// Delete every version file under `dir` (a partition's directory no
    /// committed pointer names any more).
    pub fn remove(store: &dyn CheckpointStore, dir: &str) -> Result<(), CheckpointError> {
        for kind in [SNAPSHOT, DELTA] {
            for v in store.list_numbered(&kind_dir(dir, kind))? {
                store.delete(&path(dir, kind, v))?;
            }
        }
        Ok(())
    }

    /// Keep the state and version, but write later versions under `dir`
    /// (which has no files yet), starting with a snapshot: a partition that
    /// changed owner never writes into its last owner's directory.
    pub fn moved_to(&mut self, dir: String) {
        self.dir = dir;
        self.snapshots.clear();
    }

    /// Make the current state durable as `version + 1` and move to it.
    pub fn commit(
        &mut self,
        store: &dyn CheckpointStore,
        options: &StateFileOptions,
    ) -> Result<(), CheckpointError> {
        let v = self.version + 1;
        let due = self
            .snapshots
            .last()
            .is_none_or(|&s| v - s >= options.snapshot_interval.max(1));
        if let Some(e) = self.state.error() {
            return Err(CheckpointError::Mismatch(format!("{}: {e}", self.dir)));
        }
        if due {
            self.state.drain_delta(|_| {});
            let mut enc = Encoder::new(SNAPSHOT, v, std::mem::take(&mut self.buffer));
            // The state's estimate (with 64 bytes an entry, more than the
            // file's 9) bounds the file: reserved once, not grown by copies.
            enc.out.reserve(self.state.memory_bytes());
            self.state.for_each_raw(|k, v| enc.push(PUT, k, Some(v)));
            let bytes = enc.finish();
            if options.write_once {
                store.create(&path(&self.dir, SNAPSHOT, v), &bytes)?;
            } else {
                store.write(&path(&self.dir, SNAPSHOT, v), &bytes)?;
                // A delta of this version left by a crashed run is stale.
                store.delete(&path(&self.dir, DELTA, v))?;
            }
            self.buffer = bytes;
            self.snapshots.push(v);
            self.prune(store, v.saturating_sub(options.keep_versions))?;
        } else {
            let mut enc = Encoder::new(DELTA, v, std::mem::take(&mut self.buffer));
            self.state.drain_delta(|c| match c {
                Change::Put(k, v) => enc.push(PUT, k, Some(v)),
                Change::Remove(k) => enc.push(REMOVE, k, None),
                Change::RemoveThrough(k) => enc.push(REMOVE_THROUGH, k, None),
            });
            let bytes = enc.finish();
            if options.write_once {
                store.create(&path(&self.dir, DELTA, v), &bytes)?;
            } else {
                store.write(&path(&self.dir, DELTA, v), &bytes)?;
                // So must be a snapshot of this version: loading prefers snapshots.
                store.delete(&path(&self.dir, SNAPSHOT, v))?;
            }
            self.buffer = bytes;
        }
        self.state.checkpointed(due);
        self.version = v;
        crate::faults::point("after-state-write", v - 1);
        Ok(())
    }

    /// Delete files no longer needed to load any version >= `oldest`.
    fn prune(&mut self, store: &dyn CheckpointStore, oldest: u64) -> Result<(), CheckpointError> {
        let Some(&base) = self.snapshots.iter().rev().find(|&&s| s <= oldest) else {
            return Ok(());
        };
        for &s in self.snapshots.iter().filter(|&&s| s < base) {
            store.delete(&path(&self.dir, SNAPSHOT, s))?;
        }
        self.snapshots.retain(|&s| s >= base);
        for d in store.list_numbered(&format!("{}/deltas", self.dir))? {
            if d > base {
                break;
            }
            store.delete(&path(&self.dir, DELTA, d))?;
        }
        Ok(())
    }
}

/// Builds a state file: header, entries, entry count, CRC.
struct Encoder {
    out: Vec<u8>,
    count: u64,
}

/// Where the entry count sits in the header.
const COUNT_AT: usize = 17;

impl Encoder {
    /// An encoder writing into `out` (cleared; its capacity is reused).
    fn new(kind: u8, version: u64, mut out: Vec<u8>) -> Self {
        out.clear();
        out.extend_from_slice(MAGIC);
        out.push(kind);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        Encoder { out, count: 0 }
    }

    fn push(&mut self, tag: u8, k: &[u8], v: Option<&[u8]>) {
        let out = &mut self.out;
        self.count += 1;
        out.push(tag);
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        if let Some(v) = v {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.out[COUNT_AT..COUNT_AT + 8].copy_from_slice(&self.count.to_le_bytes());
        let crc = crc32fast::hash(&self.out);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }
}

fn read_into(
    store: &dyn CheckpointStore,
    p: &str,
    kind: u8,
    version: u64,
    state: &mut KeyedState,
) -> Result<(), CheckpointError> {
    let bytes = store
        .read(p)?
        .ok_or_else(|| corrupt(store, p, "missing (deleted while loading?)"))?;
    let bad = |what: &str| corrupt(store, p, format!("corrupt state file: {what}"));
    if bytes.len() < MAGIC.len() + 1 + 8 + 8 + 4
        || (&bytes[..8] != MAGIC && &bytes[..8] != MAGIC_V1)
    {
        return Err(bad("not a weir state file (bad header or truncated)"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(bad("checksum mismatch (torn write or altered file)"));
    }
    if body[8] != kind {
        return Err(bad("wrong file kind"));
    }
    let num = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
    if num(9) != version {
        return Err(bad(&format!(
            "holds version {} instead of {version}",
            num(9)
        )));
    }
    let count = num(17);
    let mut rest = &body[25..];
    let mut take = |n: usize| -> Result<&[u8], CheckpointError> {
        if rest.len() < n {
            return Err(bad("entry runs past the end"));
        }
        let (a, b) = rest.split_at(n);
        rest = b;
        Ok(a)
    };
    for _ in 0..count {
        let tag = take(1)?[0];
        let klen = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        let key = take(klen)?;
        if tag > REMOVE_THROUGH || !known_namespace(key) {
            return Err(bad(
                "an entry of an unknown kind (written by a newer weir?)",
            ));
        }
        match tag {
            PUT => {
                let vlen = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
                let value = take(vlen)?.to_vec();
                state.apply(key.to_vec(), Some(value));
            }
            REMOVE => state.apply(key.to_vec(), None),
            _ => state.apply_removal_through(key),
        }
    }
    if !rest.is_empty() {
        return Err(bad("trailing bytes after the last entry"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
