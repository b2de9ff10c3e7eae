//! The lock of a checkpoint on object storage: a lease object.
//!
//! There is no `flock` across machines, so the holder keeps an object
//! (`lock`) fresh: it creates it with a conditional put and rewrites it
//! every third of [`TTL`], each time only if it is still the version it
//! wrote last. Another process that finds the lease waits: if it changes,
//! its holder is alive and the newcomer is refused; if it stays the same
//! for a whole TTL, the holder is gone and the newcomer takes it over with
//! a conditional put on that version (of two newcomers one wins). No
//! clocks are compared across machines. On the holder's own host a lease
//! whose process is gone (a SIGKILL) is taken over at once.
//!
//! A lease is a courtesy that turns a mistake into a clear error; what
//! keeps a checkpoint correct if two processes do write it is that
//! `offsets/N` and `commits/N` are write-once objects.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use object_store::PutMode;
use serde::{Deserialize, Serialize};

use super::object::Objects;
use weir_engine::CheckpointError;

/// A holder that has not renewed its lease for this long is presumed gone
/// (tests use shorter ones).
pub const TTL: Duration = Duration::from_secs(10);
const PATH: &str = "lock";

#[derive(Serialize, Deserialize, Clone, PartialEq)]
struct Holder {
    owner: String,
    host: String,
    pid: u32,
    renewals: u64,
    released: bool,
}

pub(super) struct Lease {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// This host's name (gethostname(2)): a lease tells local holders, whose
/// pids it may check, from remote ones by it.
fn hostname() -> Result<String, CheckpointError> {
    crate::hostname::hostname().map_err(|err| CheckpointError::Io {
        path: PATH.into(),
        err,
    })
}

/// Whether process `pid` of this host may be alive: only a definite "no
/// such process" (kill(pid, 0) failing with ESRCH) counts as gone; a pid
/// that cannot be checked counts as alive, so a lease is never taken from
/// a holder that might still write.
fn may_be_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 delivers nothing; it only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Owners of the leases this process holds: a lease with this host and
/// pid but an owner not among them was left by an earlier process that had
/// the same pid (a restarted container's pid 1).
static HELD: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Whether `h`'s process is gone (it ran on this host).
fn gone(h: &Holder, me: &Holder) -> bool {
    if h.host != me.host {
        return false;
    }
    if h.pid == me.pid {
        return !HELD.lock().expect("not poisoned").contains(&h.owner);
    }
    !may_be_alive(h.pid)
}

fn io(objects: &Objects, e: object_store::Error) -> CheckpointError {
    CheckpointError::Io {
        path: format!("{}/{PATH}", objects.url()),
        err: std::io::Error::other(e.to_string()),
    }
}

impl Lease {
    /// Take the lease, presuming a holder gone after `ttl` without a
    /// renewal, and keep it renewed every third of `ttl` until dropped.
    pub fn acquire(objects: Arc<Objects>, ttl: Duration) -> Result<Lease, CheckpointError> {
        let mut me = Holder {
            owner: uuid::Uuid::new_v4().to_string(),
            host: hostname()?,
            pid: std::process::id(),
            renewals: 0,
            released: false,
        };
        let body = |h: &Holder| serde_json::to_vec(h).expect("serializes");
        let mut tag = match objects.put(PATH, body(&me), PutMode::Create) {
            Ok(tag) => tag,
            Err(object_store::Error::AlreadyExists { .. }) => Self::take_over(&objects, &me, ttl)?,
            Err(e) => return Err(io(&objects, e)),
        };
        HELD.lock().expect("not poisoned").push(me.owner.clone());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("weir-lease".into())
                .spawn(move || {
                    let mut next = Instant::now() + ttl / 3;
                    while !stop.load(Ordering::SeqCst) {
                        std::thread::sleep((ttl / 30).min(Duration::from_millis(100)));
                        if Instant::now() < next {
                            continue;
                        }
                        next = Instant::now() + ttl / 3;
                        me.renewals += 1;
                        match objects.update(PATH, body(&me), tag.clone()) {
                            Ok(t) => tag = t,
                            Err(object_store::Error::Precondition { .. }) => {
                                tracing::error!(
                                    "the lease on checkpoint {} was taken over by another process (this one stalled for longer than {ttl:?}); its writes will now conflict",
                                    objects.url()
                                );
                                HELD.lock().expect("not poisoned").retain(|o| *o != me.owner);
                                return;
                            }
                            Err(e) => tracing::warn!(
                                "renewing the lease on checkpoint {}: {e}",
                                objects.url()
                            ),
                        }
                    }
                    me.released = true;
                    let _ = objects.update(PATH, body(&me), tag);
                    HELD.lock().expect("not poisoned").retain(|o| *o != me.owner);
                })
                .map_err(|e| CheckpointError::Io {
                    path: PATH.into(),
                    err: e,
                })?
        };
        Ok(Lease {
            stop,
            thread: Some(thread),
        })
    }

    /// The lease exists: take it if it is released, its process is gone,
    /// or it stays unchanged for a TTL; refuse if it is renewed.
    fn take_over(
        objects: &Objects,
        me: &Holder,
        ttl: Duration,
    ) -> Result<Option<String>, CheckpointError> {
        let read = || objects.get(PATH).map_err(|e| io(objects, e));
        let started = Instant::now();
        let mut seen: Option<(Vec<u8>, Option<String>)> = None;
        loop {
            let Some((bytes, tag)) = read()? else {
                // Deleted meanwhile: create it again.
                let fresh = serde_json::to_vec(me).expect("serializes");
                return objects
                    .put(PATH, fresh, PutMode::Create)
                    .map_err(|e| io(objects, e));
            };
            let holder: Option<Holder> = serde_json::from_slice(&bytes).ok();
            let gone = holder.as_ref().is_some_and(|h| h.released || gone(h, me));
            let expired = seen.as_ref().is_some_and(|(b, t)| *b == bytes && *t == tag)
                && started.elapsed() >= ttl;
            if let Some((b, t)) = &seen
                && (*b != bytes || *t != tag)
            {
                let who = holder
                    .map(|h| format!("pid {} on {}", h.pid, h.host))
                    .unwrap_or_else(|| "unknown".into());
                return Err(CheckpointError::InUse(format!(
                    "checkpoint {} is in use by another weir process ({who}); stop it first, or give this pipeline its own checkpoint",
                    objects.url()
                )));
            }
            if gone || expired {
                let fresh = serde_json::to_vec(me).expect("serializes");
                return match objects.update(PATH, fresh, tag) {
                    Ok(t) => Ok(t),
                    Err(object_store::Error::Precondition { .. }) => {
                        Err(CheckpointError::InUse(format!(
                            "checkpoint {} was just taken by another weir process",
                            objects.url()
                        )))
                    }
                    Err(e) => Err(io(objects, e)),
                };
            }
            if seen.is_none() {
                tracing::info!(
                    "checkpoint {} holds another process's lease; waiting up to {ttl:?} to see whether it is alive",
                    objects.url()
                );
            }
            seen = Some((bytes, tag));
            std::thread::sleep((ttl / 20).min(Duration::from_millis(500)));
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(600);

    fn bucket() -> Arc<Objects> {
        Objects::in_memory("cp")
    }

    fn holder(objects: &Objects) -> Holder {
        let (bytes, _) = objects.get(PATH).unwrap().expect("a lease object");
        serde_json::from_slice(&bytes).unwrap()
    }

    fn write(objects: &Objects, h: &Holder) {
        let tag = objects.get(PATH).unwrap().and_then(|(_, t)| t);
        let body = serde_json::to_vec(h).unwrap();
        match tag {
            Some(_) => objects.update(PATH, body, tag).unwrap(),
            None => objects.put(PATH, body, PutMode::Create).unwrap(),
        };
    }

    fn elsewhere() -> Holder {
        Holder {
            owner: "other".into(),
            host: "another-machine".into(),
            pid: 1,
            renewals: 0,
            released: false,
        }
    }

    #[test]
    fn a_live_holder_keeps_its_lease_and_a_newcomer_is_refused() {
        let objects = bucket();
        let lease = Lease::acquire(objects.clone(), SHORT).unwrap();
        let started = Instant::now();
        let Err(e) = Lease::acquire(objects.clone(), SHORT) else {
            panic!("two holders at once");
        };
        assert!(
            e.to_string().contains("in use by another weir process"),
            "{e}"
        );
        assert!(
            started.elapsed() < SHORT * 2,
            "refused once a renewal is seen"
        );
        assert!(holder(&objects).renewals > 0);
        drop(lease);
        assert!(holder(&objects).released, "dropping releases it");
        let _again = Lease::acquire(objects, SHORT).unwrap();
    }

    #[test]
    fn a_holder_that_stopped_renewing_is_taken_over_after_the_ttl() {
        let objects = bucket();
        write(&objects, &elsewhere());
        let started = Instant::now();
        let _lease = Lease::acquire(objects.clone(), SHORT).unwrap();
        assert!(started.elapsed() >= SHORT, "waited a whole TTL");
        assert_eq!(holder(&objects).pid, std::process::id());
    }

    #[test]
    fn a_released_lease_or_a_dead_local_process_is_taken_at_once() {
        let objects = bucket();
        let mut released = elsewhere();
        released.released = true;
        write(&objects, &released);
        let started = Instant::now();
        drop(Lease::acquire(objects.clone(), Duration::from_secs(60)).unwrap());
        // A process of this host that is gone: one that ran and was reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        let mut dead = elsewhere();
        dead.host = hostname().unwrap();
        dead.pid = child.id();
        write(&objects, &dead);
        drop(Lease::acquire(objects, Duration::from_secs(60)).unwrap());
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_pid_that_cannot_be_checked_counts_as_alive() {
        assert!(may_be_alive(std::process::id()));
        // Beyond pid_t, or 0 (which kill would take as a process group).
        assert!(may_be_alive(u32::MAX));
        assert!(may_be_alive(0));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        assert!(!may_be_alive(child.id()));
    }
}
