//! Waiting for a topic's next commit without polling it. One inotify
//! instance per process watches the directories of the topics someone waits
//! on; a change there (the commit file is written last, so it is the
//! visibility point) wakes every waiter of that topic. Writers in other
//! processes wake readers too, since the kernel reports their writes.
//!
//! Waiters still time out and look for themselves: an event can be missed
//! (the watch was added after the write, the kernel queue overflowed), and a
//! wake-up only says "look", never "there is data".

use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::Waker;
use std::time::Duration;

/// A topic's change counter; waiters sleep on it, or leave a waker.
#[derive(Default)]
pub struct Changes {
    count: Mutex<u64>,
    changed: Condvar,
    /// Woken once, at the next change (queries parked without a thread).
    wakers: Mutex<Vec<Waker>>,
}

impl Changes {
    /// The current count, to wait for a change after it.
    pub fn seen(&self) -> u64 {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait until the count moves past `seen` or `timeout` passes; true if
    /// it moved.
    pub fn wait_after(&self, seen: u64, timeout: Duration) -> bool {
        let g = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self
            .changed
            .wait_timeout_while(g, timeout, |c| *c == seen)
            .unwrap_or_else(|e| e.into_inner());
        *g != seen
    }

    /// Wake `waker` once the count moves past `seen`: now if it already
    /// has, else at the next change.
    pub fn wake_after(&self, seen: u64, waker: &Waker) {
        // The count's lock is held while the waker is left, so a change
        // cannot slip in between the look and the registration.
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        if *count != seen {
            drop(count);
            waker.wake_by_ref();
            return;
        }
        let mut wakers = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if !wakers.iter().any(|w| w.will_wake(waker)) {
            wakers.push(waker.clone());
        }
    }

    fn bump(&self) {
        let wakers = {
            let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
            *count += 1;
            std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner()))
        };
        self.changed.notify_all();
        for w in wakers {
            w.wake();
        }
    }
}

/// One reader's view of a topic's commits: the change count its last look
/// saw, to wait for the next change after it (or poll where the topic
/// cannot be watched).
pub struct Watch {
    changes: Option<Arc<Changes>>,
    seen: u64,
}

impl Watch {
    pub fn new(topic_dir: &Path) -> Self {
        Watch {
            changes: changes(topic_dir),
            seen: 0,
        }
    }

    /// A watch woken by writes to the partitions' data as well as commits.
    pub fn with_partitions(topic_dir: &Path, partitions: u32) -> Self {
        Watch {
            changes: changes_with_partitions(topic_dir, partitions),
            seen: 0,
        }
    }

    /// Whether commits wake [`Self::wait`] (else it only sleeps).
    pub fn wakes(&self) -> bool {
        self.changes.is_some()
    }

    /// Note the current count before reading the commit file, so a commit
    /// in between still wakes the next wait; true if it moved since the
    /// last look (always true where nothing is watched).
    pub fn look(&mut self) -> bool {
        let Some(c) = &self.changes else {
            return true;
        };
        let now = c.seen();
        let moved = now != self.seen;
        self.seen = now;
        moved
    }

    /// Wake `waker` once, at the first commit after the last look (now if
    /// one came already). False where nothing is watched (poll instead).
    pub fn wake_after(&self, waker: &Waker) -> bool {
        match &self.changes {
            Some(c) => {
                c.wake_after(self.seen, waker);
                true
            }
            None => false,
        }
    }

    /// Wait until a commit after the last look, or `timeout`.
    pub fn wait(&self, timeout: Duration) {
        match &self.changes {
            Some(c) => {
                c.wait_after(self.seen, timeout);
            }
            None => std::thread::sleep(timeout),
        }
    }
}

struct Watcher {
    fd: libc::c_int,
    by_dir: Mutex<HashMap<PathBuf, Arc<Changes>>>,
    by_wd: Mutex<HashMap<libc::c_int, Arc<Changes>>>,
}

/// The process's watcher, or `None` where inotify is unavailable (then
/// waiters fall back to timed polling).
fn watcher() -> Option<&'static Watcher> {
    static W: OnceLock<Option<Watcher>> = OnceLock::new();
    W.get_or_init(|| {
        // SAFETY: a plain syscall; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        if fd < 0 {
            tracing::warn!(
                "embedded log: inotify unavailable ({}); idle readers poll",
                std::io::Error::last_os_error()
            );
            return None;
        }
        let spawned = std::thread::Builder::new()
            .name("weir-log-watch".into())
            .spawn(move || read_events(fd));
        if let Err(e) = spawned {
            tracing::warn!("embedded log: no watcher thread ({e}); idle readers poll");
            // SAFETY: closing the descriptor opened above, used by no one.
            unsafe { libc::close(fd) };
            return None;
        }
        Some(Watcher {
            fd,
            by_dir: Mutex::new(HashMap::new()),
            by_wd: Mutex::new(HashMap::new()),
        })
    })
    .as_ref()
}

/// The change counter of the topic in `dir`, watched from now on. `None`
/// when changes cannot be watched (no inotify, or the watch limit is hit).
pub fn changes(dir: &Path) -> Option<Arc<Changes>> {
    let w = watcher()?;
    let mut by_dir = w.by_dir.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = by_dir.get(dir) {
        return Some(c.clone());
    }
    let c = Arc::new(Changes::default());
    add_watch(w, dir, &c)?;
    by_dir.insert(dir.to_path_buf(), c.clone());
    Some(c)
}

/// The change counter of the topic in `dir`, also moved by writes to the
/// segment files of its partitions (for readers of uncommitted records,
/// which look at data before it is committed).
pub fn changes_with_partitions(dir: &Path, partitions: u32) -> Option<Arc<Changes>> {
    let c = changes(dir)?;
    let w = watcher()?;
    let mut by_dir = w.by_dir.lock().unwrap_or_else(|e| e.into_inner());
    for p in 0..partitions {
        let pd = dir.join(p.to_string());
        if let std::collections::hash_map::Entry::Vacant(e) = by_dir.entry(pd) {
            add_watch(w, e.key(), &c)?;
            e.insert(c.clone());
        }
    }
    Some(c)
}

fn add_watch(w: &Watcher, dir: &Path, c: &Arc<Changes>) -> Option<()> {
    let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mask = libc::IN_MODIFY | libc::IN_CLOSE_WRITE | libc::IN_MOVED_TO | libc::IN_CREATE;
    // SAFETY: `path` is a valid C string for the duration of the call.
    let wd = unsafe { libc::inotify_add_watch(w.fd, path.as_ptr(), mask) };
    if wd < 0 {
        tracing::warn!(
            "embedded log: cannot watch {} ({}); its idle readers poll",
            dir.display(),
            std::io::Error::last_os_error()
        );
        return None;
    }
    w.by_wd
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(wd, c.clone());
    Some(())
}

/// The watcher thread: wake the waiters of every directory that changed.
fn read_events(fd: libc::c_int) {
    let mut buf = vec![0u8; 64 * 1024];
    let header = std::mem::size_of::<libc::inotify_event>();
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            tracing::warn!(
                "embedded log: watcher stopped ({}); idle readers poll",
                std::io::Error::last_os_error()
            );
            return;
        }
        let Some(w) = watcher() else { return };
        let mut at = 0usize;
        let n = n as usize;
        while at + header <= n {
            // SAFETY: the kernel wrote a whole event header at `at`;
            // read_unaligned copes with any alignment.
            let ev: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
            at += header + ev.len as usize;
            if ev.mask & libc::IN_Q_OVERFLOW != 0 {
                // Events were lost: wake everyone to look.
                for c in w.by_wd.lock().unwrap_or_else(|e| e.into_inner()).values() {
                    c.bump();
                }
                continue;
            }
            let c = w
                .by_wd
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&ev.wd)
                .cloned();
            if let Some(c) = c {
                c.bump();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_in_the_directory_wakes_its_waiters() {
        let dir = tempfile::tempdir().unwrap();
        let c = changes(dir.path()).expect("inotify on this machine");
        assert!(Arc::ptr_eq(&c, &changes(dir.path()).unwrap()));
        let seen = c.seen();
        assert!(
            !c.wait_after(seen, Duration::from_millis(20)),
            "nothing changed"
        );
        let path = dir.path().join("commits");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(path, b"x").unwrap();
        });
        let started = std::time::Instant::now();
        assert!(c.wait_after(seen, Duration::from_secs(10)));
        assert!(started.elapsed() < Duration::from_secs(5));
        writer.join().unwrap();
    }

    /// Counts its wakes and hands each to a channel.
    struct Probe(Mutex<std::sync::mpsc::Sender<()>>);
    impl std::task::Wake for Probe {
        fn wake(self: Arc<Self>) {
            let _ = self.0.lock().unwrap().send(());
        }
    }

    #[test]
    fn a_left_waker_is_woken_once_by_the_next_write_or_at_once_after_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = Watch::new(dir.path());
        watch.look();
        let (tx, woke) = std::sync::mpsc::channel();
        let waker = Waker::from(Arc::new(Probe(Mutex::new(tx))));
        assert!(watch.wake_after(&waker));
        // Left twice, kept once.
        assert!(watch.wake_after(&waker));
        assert!(woke.recv_timeout(Duration::from_millis(50)).is_err());
        std::fs::write(dir.path().join("commits"), b"x").unwrap();
        woke.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(woke.recv_timeout(Duration::from_millis(100)).is_err());
        // A write since the last look wakes at once: nothing is missed
        // between a look and the waker being left.
        std::fs::write(dir.path().join("commits"), b"y").unwrap();
        let c = watch.changes.clone().unwrap();
        while c.seen() == watch.seen {
            c.wait_after(watch.seen, Duration::from_secs(10));
        }
        assert!(watch.wake_after(&waker));
        woke.recv_timeout(Duration::from_millis(10)).unwrap();
    }
}
