//! The FUSE side of the power-loss file system: each request answered
//! from the [`Model`], with nothing cached by the kernel (TTL 0, pages
//! dropped at open) and requests through handles opened before the last
//! power cut refused.

use std::ffi::OsStr;
use std::sync::MutexGuard;
use std::time::{SystemTime, UNIX_EPOCH};

use fuser::{
    FileAttr, FileType, Filesystem, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};

use super::model::{Body, Model};
use super::{PowerFs, Shared, TTL};

impl PowerFs {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// fsync(2) or fsync of a directory: the model says what reaches disk.
    fn sync(&self, ino: u64, fh: u64, reply: ReplyEmpty) {
        let mut s = self.lock();
        if !s.current(fh) {
            return reply.error(libc::EIO);
        }
        match s.model.fsync(ino) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

fn attr(m: &Model, ino: u64) -> Option<FileAttr> {
    let inode = m.get(ino)?;
    let (kind, size) = match &inode.body {
        Body::File(d) => (FileType::RegularFile, d.len() as u64),
        Body::Dir(_) => (FileType::Directory, 0),
    };
    Some(FileAttr {
        ino,
        size,
        blocks: size.div_ceil(512),
        atime: inode.mtime,
        mtime: inode.mtime,
        ctime: inode.mtime,
        crtime: UNIX_EPOCH,
        kind,
        perm: inode.perm,
        nlink: m.nlink(ino),
        uid: unsafe { libc::geteuid() },
        gid: unsafe { libc::getegid() },
        rdev: 0,
        blksize: 4096,
        flags: 0,
    })
}

fn reply_entry(m: &Model, ino: u64, reply: ReplyEntry) {
    match attr(m, ino) {
        Some(a) => reply.entry(&TTL, &a, 0),
        None => reply.error(libc::ENOENT),
    }
}

impl Filesystem for PowerFs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let s = self.lock();
        match s.model.lookup(parent, name) {
            Ok(ino) => reply_entry(&s.model, ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match attr(&self.lock().model, ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(libc::ENOENT),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let mut s = self.lock();
        if fh.is_some_and(|fh| !s.current(fh)) {
            return reply.error(libc::EIO);
        }
        let mut result = Ok(());
        if let Some(size) = size {
            result = s.model.truncate(ino, size);
        }
        if let (Ok(()), Some(mode)) = (result, mode) {
            result = s.model.chmod(ino, (mode & 0o7777) as u16);
        }
        match result.map(|()| attr(&s.model, ino)) {
            Ok(Some(a)) => reply.attr(&TTL, &a),
            Ok(None) => reply.error(libc::ENOENT),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let mut s = self.lock();
        match s
            .model
            .create(parent, name, true, (mode & !umask & 0o7777) as u16)
        {
            Ok(ino) => reply_entry(&s.model, ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        match self.lock().model.remove(parent, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        match self.lock().model.remove(parent, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        if flags & !libc::RENAME_NOREPLACE != 0 {
            return reply.error(libc::EINVAL);
        }
        let no_replace = flags & libc::RENAME_NOREPLACE != 0;
        match self
            .lock()
            .model
            .rename(parent, name, newparent, newname, no_replace)
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let mut s = self.lock();
        match s.model.link(ino, newparent, newname) {
            Ok(()) => reply_entry(&s.model, ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let mut s = self.lock();
        if s.model.get(ino).is_none() {
            return reply.error(libc::ENOENT);
        }
        if flags & libc::O_TRUNC != 0
            && let Err(e) = s.model.truncate(ino, 0)
        {
            return reply.error(e);
        }
        let fh = s.open_handle();
        // No FOPEN_KEEP_CACHE: the kernel drops the file's cached pages.
        reply.opened(fh, 0);
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut s = self.lock();
        let perm = (mode & !umask & 0o7777) as u16;
        let ino = match s.model.create(parent, name, false, perm) {
            Ok(ino) => ino,
            Err(libc::EEXIST) if flags & libc::O_EXCL == 0 => match s.model.lookup(parent, name) {
                Ok(ino) => ino,
                Err(e) => return reply.error(e),
            },
            Err(e) => return reply.error(e),
        };
        if flags & libc::O_TRUNC != 0
            && let Err(e) = s.model.truncate(ino, 0)
        {
            return reply.error(e);
        }
        let fh = s.open_handle();
        match attr(&s.model, ino) {
            Some(a) => reply.created(&TTL, &a, 0, fh, 0),
            None => reply.error(libc::ENOENT),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        match self.lock().model.read(ino, offset as u64, size as usize) {
            Ok(bytes) => reply.data(bytes),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let mut s = self.lock();
        if !s.current(fh) {
            return reply.error(libc::EIO);
        }
        let offset = if flags & libc::O_APPEND != 0 {
            s.model.len(ino).unwrap_or(0)
        } else {
            offset as u64
        };
        match s.model.write(ino, offset, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, fh: u64, _data: bool, reply: ReplyEmpty) {
        self.sync(ino, fh, reply);
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        let mut s = self.lock();
        if s.model.get(ino).is_none() {
            return reply.error(libc::ENOENT);
        }
        let fh = s.open_handle();
        reply.opened(fh, 0);
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let s = self.lock();
        let entries = match s.model.list(ino) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        let dots = [(".".into(), ino), ("..".into(), ino)];
        let all = dots.into_iter().chain(entries);
        for (i, (name, child)) in all.enumerate().skip(offset as usize) {
            let kind = match s.model.get(child).map(|c| &c.body) {
                Some(Body::Dir(_)) => FileType::Directory,
                _ => FileType::RegularFile,
            };
            if reply.add(child, i as i64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, fh: u64, _data: bool, reply: ReplyEmpty) {
        self.sync(ino, fh, reply);
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: fuser::ReplyStatfs) {
        reply.statfs(1 << 20, 1 << 19, 1 << 19, 1 << 20, 1 << 19, 4096, 255, 4096);
    }

    fn access(&mut self, _req: &Request<'_>, ino: u64, _mask: i32, reply: ReplyEmpty) {
        match self.lock().model.get(ino) {
            Some(_) => reply.ok(),
            None => reply.error(libc::ENOENT),
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let mut s = self.lock();
        if mode != 0 {
            return reply.error(libc::EOPNOTSUPP);
        }
        if !s.current(fh) {
            return reply.error(libc::EIO);
        }
        let end = (offset + length) as u64;
        let len = s.model.len(ino).unwrap_or(0);
        let result = if end > len {
            s.model.truncate(ino, end)
        } else {
            Ok(())
        };
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
