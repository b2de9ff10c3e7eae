//! Writing a checkpoint file around the page cache. Checkpoint files are
//! written once and read only to recover, yet a buffered write copies every
//! byte into freshly faulted page-cache pages, which the fsync then writes
//! out: W3 wrote about 19 MB of state per partition and batch, and that
//! copy was 5-7% of its CPU time, on the tasks' critical path. With
//! `O_DIRECT` the device reads the bytes from a small aligned buffer
//! instead; the fsync that follows still makes the file durable (its size
//! and blocks are metadata).
//!
//! `O_DIRECT` wants the memory, the file offset and the length aligned to
//! the device's block size: the bulk goes in aligned chunks, the unaligned
//! tail with `O_DIRECT` turned off again. A file system without `O_DIRECT`
//! (tmpfs, some FUSE mounts) or any refused direct write falls back to a
//! plain write from where the file stands, so nothing depends on it.

use std::fs::File;
use std::io::Write;

/// Alignment that satisfies every Linux block device's logical block size.
#[cfg(target_os = "linux")]
const ALIGN: usize = 4096;
/// Bytes copied and written per direct write.
#[cfg(target_os = "linux")]
const CHUNK: usize = 4 << 20;

/// Write all of `bytes` to `f` (at its current position, which must be 0),
/// bypassing the page cache where the file system allows it.
pub(crate) fn write_all(f: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let done = direct::write_aligned_prefix(f, bytes)?;
        f.write_all(&bytes[done..])
    }
    #[cfg(not(target_os = "linux"))]
    f.write_all(bytes)
}

#[cfg(target_os = "linux")]
mod direct {
    use super::{ALIGN, CHUNK};
    use std::alloc::{Layout, alloc, dealloc};
    use std::fs::File;
    use std::os::fd::AsRawFd;

    /// An `ALIGN`-aligned, uninitialized buffer of `CHUNK` bytes.
    struct Aligned(*mut u8);

    impl Aligned {
        fn layout() -> Layout {
            Layout::from_size_align(CHUNK, ALIGN).expect("constant layout")
        }

        fn new() -> Option<Self> {
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { alloc(Self::layout()) };
            (!p.is_null()).then_some(Aligned(p))
        }
    }

    impl Drop for Aligned {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.0, Self::layout()) }
        }
    }

    fn set_direct(f: &File, on: bool) -> bool {
        let fd = f.as_raw_fd();
        // SAFETY: fcntl on a descriptor `f` owns; only the status flags change.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 {
                return false;
            }
            let flags = if on {
                flags | libc::O_DIRECT
            } else {
                flags & !libc::O_DIRECT
            };
            libc::fcntl(fd, libc::F_SETFL, flags) == 0
        }
    }

    /// Write the longest block-aligned prefix of `bytes` it can with
    /// `O_DIRECT`; returns how many bytes are written. `O_DIRECT` is off
    /// again when it returns `Ok`.
    pub(super) fn write_aligned_prefix(f: &File, bytes: &[u8]) -> std::io::Result<usize> {
        let aligned = bytes.len() / ALIGN * ALIGN;
        if aligned == 0 {
            return Ok(0);
        }
        let Some(buf) = Aligned::new() else {
            return Ok(0);
        };
        if !set_direct(f, true) {
            return Ok(0);
        }
        let mut done = 0;
        while done < aligned {
            let n = (aligned - done).min(CHUNK);
            // SAFETY: `buf` holds CHUNK >= n bytes and does not overlap `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(bytes[done..].as_ptr(), buf.0, n) };
            // SAFETY: writes n initialized bytes of `buf` to our descriptor.
            let w = unsafe { libc::write(f.as_raw_fd(), buf.0.cast(), n) };
            if w <= 0 {
                break;
            }
            done += w as usize;
            if !(w as usize).is_multiple_of(ALIGN) {
                break;
            }
        }
        if !set_direct(f, false) {
            return Err(std::io::Error::last_os_error());
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn any_length_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0, 1, 4095, 4096, 4097, (4 << 20) + 12_345, 9 << 20] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let path = dir.path().join(format!("f{len}"));
            let mut f = File::create(&path).unwrap();
            write_all(&mut f, &bytes).unwrap();
            f.sync_all().unwrap();
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert_eq!(back, bytes, "length {len}");
        }
    }
}
