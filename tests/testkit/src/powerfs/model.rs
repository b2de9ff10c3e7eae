//! What a disk keeps through a power cut, as POSIX promises it and no more
//! (the model of Jepsen's LazyFS): a file's bytes and size become durable
//! when the file is fsynced (or fdatasynced), a directory's entries when the
//! directory is fsynced. Everything else lives only in the page cache, and
//! a power cut drops it: a file created and fsynced in a directory that was
//! not fsynced since is gone; a rename not followed by an fsync of both
//! directories is undone; bytes written after the last fsync are lost.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

pub const ROOT: u64 = 1;

/// One inode, as the running system sees it or as the disk holds it.
#[derive(Clone, Debug)]
pub struct Inode {
    pub body: Body,
    pub perm: u16,
    pub mtime: SystemTime,
}

#[derive(Clone, Debug)]
pub enum Body {
    File(Vec<u8>),
    Dir(BTreeMap<OsString, u64>),
}

/// Why an operation failed, as the errno FUSE replies with.
pub type Errno = i32;

/// The file system: what is visible now, and what a power cut leaves.
pub struct Model {
    live: HashMap<u64, Inode>,
    durable: HashMap<u64, Inode>,
    next_ino: u64,
    /// Power cuts so far.
    pub cuts: u64,
}

impl Default for Model {
    fn default() -> Self {
        Self::new()
    }
}

impl Model {
    pub fn new() -> Model {
        let root = Inode {
            body: Body::Dir(BTreeMap::new()),
            perm: 0o755,
            mtime: SystemTime::now(),
        };
        Model {
            live: HashMap::from([(ROOT, root.clone())]),
            durable: HashMap::from([(ROOT, root)]),
            next_ino: ROOT + 1,
            cuts: 0,
        }
    }

    pub fn get(&self, ino: u64) -> Option<&Inode> {
        self.live.get(&ino)
    }

    /// Hard links to `ino`: entries naming it (a directory also counts its
    /// own `.` and its subdirectories' `..`).
    pub fn nlink(&self, ino: u64) -> u32 {
        let mut n = 0;
        for inode in self.live.values() {
            if let Body::Dir(entries) = &inode.body {
                n += entries.values().filter(|&&i| i == ino).count() as u32;
            }
        }
        match self.live.get(&ino).map(|i| &i.body) {
            Some(Body::Dir(entries)) => {
                let subdirs = entries
                    .values()
                    .filter(|i| matches!(self.live.get(i).map(|x| &x.body), Some(Body::Dir(_))))
                    .count() as u32;
                n + 1 + subdirs + u32::from(ino == ROOT)
            }
            _ => n,
        }
    }

    fn entries(&self, dir: u64) -> Result<&BTreeMap<OsString, u64>, Errno> {
        match self.live.get(&dir).map(|i| &i.body) {
            Some(Body::Dir(e)) => Ok(e),
            Some(Body::File(_)) => Err(libc::ENOTDIR),
            None => Err(libc::ENOENT),
        }
    }

    fn entries_mut(&mut self, dir: u64) -> Result<&mut BTreeMap<OsString, u64>, Errno> {
        match self.live.get_mut(&dir) {
            Some(Inode {
                body: Body::Dir(e),
                mtime,
                ..
            }) => {
                *mtime = SystemTime::now();
                Ok(e)
            }
            Some(_) => Err(libc::ENOTDIR),
            None => Err(libc::ENOENT),
        }
    }

    pub fn lookup(&self, dir: u64, name: &OsStr) -> Result<u64, Errno> {
        self.entries(dir)?.get(name).copied().ok_or(libc::ENOENT)
    }

    pub fn list(&self, dir: u64) -> Result<Vec<(OsString, u64)>, Errno> {
        Ok(self
            .entries(dir)?
            .iter()
            .map(|(n, i)| (n.clone(), *i))
            .collect())
    }

    /// A new file or directory `name` in `dir`.
    pub fn create(
        &mut self,
        dir: u64,
        name: &OsStr,
        is_dir: bool,
        perm: u16,
    ) -> Result<u64, Errno> {
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        let body = if is_dir {
            Body::Dir(BTreeMap::new())
        } else {
            Body::File(Vec::new())
        };
        self.live.insert(
            ino,
            Inode {
                body,
                perm,
                mtime: SystemTime::now(),
            },
        );
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        Ok(ino)
    }

    /// Another name for `ino` (a hard link).
    pub fn link(&mut self, ino: u64, dir: u64, name: &OsStr) -> Result<(), Errno> {
        match self.live.get(&ino).map(|i| &i.body) {
            Some(Body::File(_)) => {}
            Some(Body::Dir(_)) => return Err(libc::EPERM),
            None => return Err(libc::ENOENT),
        }
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        Ok(())
    }

    /// Remove entry `name` (a file, or with `dir_only` an empty directory).
    pub fn remove(&mut self, dir: u64, name: &OsStr, dir_only: bool) -> Result<(), Errno> {
        let ino = self.lookup(dir, name)?;
        match (&self.live[&ino].body, dir_only) {
            (Body::Dir(e), true) if !e.is_empty() => return Err(libc::ENOTEMPTY),
            (Body::Dir(_), false) => return Err(libc::EISDIR),
            (Body::File(_), true) => return Err(libc::ENOTDIR),
            _ => {}
        }
        self.entries_mut(dir)?.remove(name);
        Ok(())
    }

    /// rename(2), with RENAME_NOREPLACE when `no_replace`.
    pub fn rename(
        &mut self,
        from: u64,
        name: &OsStr,
        to: u64,
        new_name: &OsStr,
        no_replace: bool,
    ) -> Result<(), Errno> {
        let ino = self.lookup(from, name)?;
        if let Ok(old) = self.lookup(to, new_name) {
            if no_replace {
                return Err(libc::EEXIST);
            }
            if old == ino {
                return Ok(());
            }
            match (&self.live[&ino].body, &self.live[&old].body) {
                (Body::File(_), Body::Dir(_)) => return Err(libc::EISDIR),
                (Body::Dir(_), Body::File(_)) => return Err(libc::ENOTDIR),
                (Body::Dir(_), Body::Dir(e)) if !e.is_empty() => return Err(libc::ENOTEMPTY),
                _ => {}
            }
        }
        self.entries_mut(from)?.remove(name);
        self.entries_mut(to)?.insert(new_name.to_owned(), ino);
        Ok(())
    }

    fn data_mut(&mut self, ino: u64) -> Result<&mut Vec<u8>, Errno> {
        match self.live.get_mut(&ino) {
            Some(Inode {
                body: Body::File(d),
                mtime,
                ..
            }) => {
                *mtime = SystemTime::now();
                Ok(d)
            }
            Some(_) => Err(libc::EISDIR),
            None => Err(libc::ENOENT),
        }
    }

    pub fn read(&self, ino: u64, offset: u64, size: usize) -> Result<&[u8], Errno> {
        match self.live.get(&ino).map(|i| &i.body) {
            Some(Body::File(d)) => {
                let start = (offset as usize).min(d.len());
                Ok(&d[start..(start + size).min(d.len())])
            }
            Some(Body::Dir(_)) => Err(libc::EISDIR),
            None => Err(libc::ENOENT),
        }
    }

    pub fn write(&mut self, ino: u64, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let d = self.data_mut(ino)?;
        let end = offset as usize + bytes.len();
        if d.len() < end {
            d.resize(end, 0);
        }
        d[offset as usize..end].copy_from_slice(bytes);
        Ok(())
    }

    pub fn truncate(&mut self, ino: u64, size: u64) -> Result<(), Errno> {
        self.data_mut(ino)?.resize(size as usize, 0);
        Ok(())
    }

    pub fn chmod(&mut self, ino: u64, perm: u16) -> Result<(), Errno> {
        self.live.get_mut(&ino).ok_or(libc::ENOENT)?.perm = perm;
        Ok(())
    }

    /// fsync(2) of a file: its bytes, size and mode reach the disk (not
    /// the entries naming it). Of a directory: its entries do; an entry
    /// naming an inode the disk has never held gets that inode as it is on
    /// disk: an empty file or directory, as a crash leaves a file whose
    /// data was never synced.
    pub fn fsync(&mut self, ino: u64) -> Result<(), Errno> {
        let inode = self.live.get(&ino).ok_or(libc::ENOENT)?.clone();
        match &inode.body {
            Body::File(_) => {
                self.durable.insert(ino, inode);
            }
            Body::Dir(entries) => {
                for &child in entries.values() {
                    if !self.durable.contains_key(&child) {
                        let mut empty = self.live[&child].clone();
                        empty.body = match empty.body {
                            Body::File(_) => Body::File(Vec::new()),
                            Body::Dir(_) => Body::Dir(BTreeMap::new()),
                        };
                        self.durable.insert(child, empty);
                    }
                }
                let mut on_disk = self.durable.get(&ino).cloned().unwrap_or(inode.clone());
                on_disk.body = inode.body.clone();
                on_disk.perm = inode.perm;
                self.durable.insert(ino, on_disk);
            }
        }
        Ok(())
    }

    /// sync(2): everything reaches the disk (as for input written long
    /// before the run under test).
    pub fn sync_all(&mut self) {
        self.durable = self.live.clone();
    }

    /// A file's size.
    pub fn len(&self, ino: u64) -> Result<u64, Errno> {
        self.read(ino, 0, usize::MAX >> 1).map(|d| d.len() as u64)
    }

    /// The power goes after the kernel wrote back some of what was not
    /// synced, as it does on its own schedule: each inode that changed
    /// since its last sync reaches the disk whole when `written_back()`
    /// says so (in inode order), the rest is lost. A writer that is only
    /// right when the kernel flushes nothing, or everything, is caught.
    pub fn cut_power_after_writeback(&mut self, written_back: &mut dyn FnMut() -> bool) {
        let mut inos: Vec<u64> = self.live.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            if written_back() {
                self.fsync(ino).expect("a live inode");
            }
        }
        self.cut_power();
    }

    /// The power goes: what was not synced is gone, and the system comes
    /// back with what the disk holds (inodes no entry reaches are freed).
    pub fn cut_power(&mut self) {
        self.cuts += 1;
        let mut kept = HashMap::new();
        let mut todo = vec![ROOT];
        while let Some(ino) = todo.pop() {
            if kept.contains_key(&ino) {
                continue;
            }
            let Some(inode) = self.durable.get(&ino) else {
                continue;
            };
            if let Body::Dir(e) = &inode.body {
                todo.extend(e.values().copied());
            }
            kept.insert(ino, inode.clone());
        }
        self.durable = kept.clone();
        self.live = kept;
    }
}

#[cfg(test)]
mod tests;
