//! The checkpoint directory, Spark's layout: `metadata`, `offsets/N`,
//! `commits/N`, `sources/<i>/N`, plus `progress` (the last progress record).
//!
//! All access goes through [`CheckpointStore`], so the engine can later keep
//! checkpoints on object storage; [`LocalCheckpointStore`] is the file-system
//! implementation (write to a temp file, fsync, rename, fsync the directory).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

mod uncached;

/// Why a checkpoint could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{path}: {problem}")]
    Corrupt { path: String, problem: String },
    #[error("{0}")]
    Mismatch(String),
    /// Another process holds the checkpoint's lock (or lease): trying
    /// again once it has stopped will do.
    #[error("{0}")]
    InUse(String),
    /// A write-once file is already there with other bytes: another
    /// process wrote it (two queries on one checkpoint, or a member of a
    /// group that lost its partitions). Never overwritten.
    #[error("{path}: already written by another process (write conflict); not overwritten")]
    Conflict { path: String },
}

/// Durable, atomic storage of small files under relative paths such as
/// `offsets/12`.
pub trait CheckpointStore: Send + Sync {
    /// The file's bytes, or `None` if it does not exist.
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, CheckpointError>;
    /// Replace the file atomically and durably.
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError>;
    /// Write a file that must never change once written (`offsets/N`,
    /// `commits/N`, state snapshots in group mode): if it exists already
    /// with other bytes, [`CheckpointError::Conflict`]. The same bytes
    /// again are accepted, so a retried write of one's own is not a
    /// conflict.
    fn create(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError>;
    /// Numeric entries of a directory (`offsets` -> [0, 1, 2...]), ascending.
    fn list_numbered(&self, dir: &str) -> Result<Vec<u64>, CheckpointError>;
    fn delete(&self, path: &str) -> Result<(), CheckpointError>;
    /// Where this store lives, for messages.
    fn location(&self) -> String;
    /// A local directory for state that outgrows memory (the disk state
    /// backend's scratch), inside the checkpoint so that it lives, and is
    /// counted, where the checkpoint is; `None` (a checkpoint on object
    /// storage): the system's temporary directory.
    fn scratch_dir(&self) -> Option<PathBuf> {
        None
    }
    /// Hold the checkpoint for one running query until the guard drops:
    /// two queries writing one checkpoint would both write `offsets/N`.
    fn lock(&self) -> Result<CheckpointLock, CheckpointError> {
        Ok(CheckpointLock(Box::new(())))
    }
}

/// Keeps a checkpoint locked while alive (see [`CheckpointStore::lock`]).
pub struct CheckpointLock(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>);

impl CheckpointLock {
    /// A lock held until `guard` drops.
    pub fn new(guard: impl std::any::Any + Send + Sync) -> Self {
        CheckpointLock(Box::new(guard))
    }
}

impl std::fmt::Debug for CheckpointLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointLock")
    }
}

/// A checkpoint directory on the local file system.
pub struct LocalCheckpointStore {
    root: PathBuf,
}

fn io(path: &Path, err: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.display().to_string(),
        err,
    }
}

impl LocalCheckpointStore {
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, CheckpointError> {
        let root = root.into();
        create_dir_all(&root).map_err(|e| io(&root, e))?;
        Ok(LocalCheckpointStore { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// fsync a directory so a rename inside it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `create_dir_all`, durably: each directory it creates is named on disk
/// (its parent fsynced) before the call returns. A directory made with a
/// plain `create_dir_all` can vanish in a power cut along with all it holds
/// while files elsewhere that count on it survive.
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        create_dir_all(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => sync_dir(parent.unwrap_or(Path::new("."))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Write `bytes` to `path` atomically and durably: temp file, fsync, rename,
/// fsync of the parent directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_all(dir)?;
    write_renamed(path, |f| f.write_all(bytes))?;
    sync_dir(dir)
}

/// Create `path` whole or not at all: `write` fills a temp file beside it,
/// which is fsynced and renamed over `path`. The directory is not fsynced:
/// a caller writing several files syncs it once (see [`write_atomic`]).
pub fn write_renamed(
    path: &Path,
    write: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Drop a synced checkpoint file's pages from the page cache (the local
/// store's files only: a sink's output is read soon, by users and tools).
/// Checkpoint files are written once and read only to recover, so caching
/// them only takes memory
/// from the data being processed: W3 wrote 225 MB of state files per run,
/// and each batch's writes faulted in fresh page-cache pages (a third of its
/// system time on this machine) where, dropped, the next batch's writes
/// reuse the ones just freed.
fn drop_cached(f: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: advice about a file we own; it changes no memory of ours.
        // A failure costs only the cache, so it is ignored.
        unsafe {
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}

impl CheckpointStore for LocalCheckpointStore {
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        let full = self.root.join(path);
        match std::fs::read(&full) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&full, e)),
        }
    }

    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        let full = self.root.join(path);
        let dir = full.parent().unwrap_or(Path::new("."));
        (|| {
            create_dir_all(dir)?;
            write_renamed(&full, |f| uncached::write_all(f, bytes))?;
            sync_dir(dir)
        })()
        .map_err(|e| io(&full, e))?;
        if let Ok(f) = File::open(&full) {
            drop_cached(&f);
        }
        Ok(())
    }

    /// A temp file hard-linked to its name: `link` fails if the name
    /// exists, so of two writers exactly one creates the file.
    fn create(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        let full = self.root.join(path);
        let dir = full.parent().unwrap_or(Path::new("."));
        let attempt = || -> std::io::Result<bool> {
            create_dir_all(dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
            uncached::write_all(tmp.as_file_mut(), bytes)?;
            tmp.as_file().sync_all()?;
            drop_cached(tmp.as_file());
            match std::fs::hard_link(tmp.path(), &full) {
                Ok(()) => {
                    sync_dir(dir)?;
                    Ok(true)
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            }
        };
        if attempt().map_err(|e| io(&full, e))? {
            return Ok(());
        }
        match std::fs::read(&full) {
            Ok(existing) if existing == bytes => Ok(()),
            Ok(_) => Err(CheckpointError::Conflict {
                path: full.display().to_string(),
            }),
            Err(e) => Err(io(&full, e)),
        }
    }

    fn list_numbered(&self, dir: &str) -> Result<Vec<u64>, CheckpointError> {
        let full = self.root.join(dir);
        let entries = match std::fs::read_dir(&full) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(io(&full, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io(&full, e))?;
            if let Some(n) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
                out.push(n);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    fn delete(&self, path: &str) -> Result<(), CheckpointError> {
        let full = self.root.join(path);
        match std::fs::remove_file(&full) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&full, e)),
        }
    }

    fn scratch_dir(&self) -> Option<PathBuf> {
        Some(self.root.join("scratch"))
    }

    fn location(&self) -> String {
        self.root.display().to_string()
    }

    /// An exclusive `flock` on `<checkpoint>/lock`, which holds the owner's
    /// pid for the message a second process gets. The kernel drops the lock
    /// when its process dies, even by SIGKILL, so a crash never leaves the
    /// checkpoint locked.
    fn lock(&self) -> Result<CheckpointLock, CheckpointError> {
        use std::io::{Read, Seek};
        use std::os::fd::AsRawFd;
        let path = self.root.join("lock");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::WouldBlock {
                return Err(io(&path, err));
            }
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(CheckpointError::InUse(format!(
                "checkpoint {} is in use by another weir process (pid {}); stop it first, or give this pipeline its own checkpoint",
                self.root.display(),
                holder.trim()
            )));
        }
        let write_pid = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.rewind()?;
            write!(f, "{}", std::process::id())?;
            f.sync_all()
        };
        write_pid(&mut file).map_err(|e| io(&path, e))?;
        Ok(CheckpointLock(Box::new(file)))
    }
}

/// Format version written as the first line of every log entry, as Spark does.
const VERSION_LINE: &str = "v1";

/// Encode a log entry: version line, then JSON.
pub fn encode_entry<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut out = format!("{VERSION_LINE}\n").into_bytes();
    serde_json::to_writer(&mut out, value).expect("checkpoint entries serialize");
    out.push(b'\n');
    out
}

/// Decode a log entry, naming the file and the problem when it is corrupt.
pub fn decode_entry<T: serde::de::DeserializeOwned>(
    store: &dyn CheckpointStore,
    path: &str,
    bytes: &[u8],
) -> Result<T, CheckpointError> {
    let corrupt = |problem: String| CheckpointError::Corrupt {
        path: format!("{}/{path}", store.location()),
        problem,
    };
    if bytes.is_empty() {
        return Err(corrupt("file is empty (truncated write?)".into()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| corrupt(format!("not UTF-8 text ({e})")))?;
    let (version, body) = text
        .split_once('\n')
        .ok_or_else(|| corrupt("missing the version line (truncated?)".into()))?;
    if version != VERSION_LINE {
        return Err(corrupt(format!(
            "unsupported format version {version:?} (this weir writes {VERSION_LINE:?})"
        )));
    }
    serde_json::from_str(body.trim_end()).map_err(|e| corrupt(format!("invalid entry: {e}")))
}

/// Read and decode `path`, or `None` if absent.
pub fn read_entry<T: serde::de::DeserializeOwned>(
    store: &dyn CheckpointStore,
    path: &str,
) -> Result<Option<T>, CheckpointError> {
    match store.read(path)? {
        None => Ok(None),
        Some(bytes) => decode_entry(store, path, &bytes).map(Some),
    }
}

#[cfg(test)]
mod tests;
