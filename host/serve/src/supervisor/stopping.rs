//! Stopping pipelines within a bound, whatever their guests do: a stop
//! asks for the end of the current batch or epoch, then interrupts the
//! guests, then leaves a run that still goes on to end in the background.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Key, Status, Supervisor};
use weir_runtime::Abort;

pub(super) struct Running {
    /// Raised to stop the pipeline for good (no more restarts).
    pub(super) stop: Arc<AtomicBool>,
    /// The stop flag of the query that runs now.
    pub(super) query_stop: Arc<Mutex<Arc<AtomicBool>>>,
    /// Interrupts its guests mid-call when a stop waited long enough.
    pub(super) abort: Abort,
    /// Its task, woken (parked or not) to see the stop.
    pub(super) task: Arc<super::task::Task>,
    pub(super) status: Arc<Mutex<Status>>,
}

impl Running {
    /// Ask it to stop after its current batch or epoch.
    fn signal(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.query_stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .store(true, Ordering::Relaxed);
        std::task::Wake::wake_by_ref(&self.task);
    }

    pub(super) fn finished(&self) -> bool {
        self.task.ended()
    }
}

/// How long a stop waits for the current batch or epoch to end before it
/// interrupts the pipeline's guests, and then for the interrupted run to
/// end: no control path waits longer on a pipeline, whatever its guest
/// does. A run that outlives both is left to end in the background
/// (`stopping`), and the pipeline cannot start again until it has.
pub const STOP_GRACE: Duration = Duration::from_secs(1);
pub const ABORT_GRACE: Duration = Duration::from_secs(1);

/// Wait until every run in `runs` has ended or `deadline` passed.
fn wait_for(runs: &[(Key, Running)], deadline: Instant) {
    while Instant::now() < deadline && runs.iter().any(|(_, r)| !r.finished()) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Supervisor {
    /// Stop a pipeline after its current batch or epoch, interrupting its
    /// guests if that takes longer than `STOP_GRACE`; returns within
    /// about `STOP_GRACE` + `ABORT_GRACE` whatever the guest does.
    pub fn stop(&self, tenant: &str, name: &str) {
        let key = (tenant.to_string(), name.to_string());
        self.halted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        let running = self
            .pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        if let Some(r) = running {
            self.stop_runs(vec![(key, r)]);
        }
    }

    /// Stop these runs together: every one is told at once, then waited for
    /// (one deadline for all), then interrupted, then waited for again.
    fn stop_runs(&self, runs: Vec<(Key, Running)>) {
        for (_, r) in &runs {
            r.signal();
        }
        wait_for(&runs, Instant::now() + STOP_GRACE);
        for (_, r) in runs.iter().filter(|(_, r)| !r.finished()) {
            r.abort.raise();
        }
        wait_for(&runs, Instant::now() + ABORT_GRACE);
        for (key, r) in runs {
            if !r.finished() {
                tracing::error!(
                    tenant = %key.0,
                    pipeline = %key.1,
                    "still running {:?} after it was stopped and its guests interrupted; left to end in the background",
                    STOP_GRACE + ABORT_GRACE
                );
                self.stopping
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, r);
            }
        }
    }

    /// Whether any run of `tenant`'s outlived its stop and still runs.
    pub fn tenant_still_stopping(&self, tenant: &str) -> bool {
        let mut stopping = self.stopping.lock().unwrap_or_else(|e| e.into_inner());
        stopping.retain(|_, r| !r.finished());
        stopping.keys().any(|(t, _)| t == tenant)
    }

    /// Whether an earlier run of `key` outlived its stop and still runs
    /// (those that ended meanwhile are forgotten).
    pub(super) fn still_stopping(&self, key: &Key) -> bool {
        let mut stopping = self.stopping.lock().unwrap_or_else(|e| e.into_inner());
        stopping.retain(|_, r| !r.finished());
        stopping.contains_key(key)
    }

    /// Stop a pipeline for a reason of the service's (a quota): it shows as
    /// `failed` with `why` until it is started again.
    pub fn halt(&self, tenant: &str, name: &str, why: &str) {
        self.halt_all(tenant, &[name.to_string()], why);
    }

    /// [`Self::halt`] for several of a tenant's pipelines, stopped together
    /// (bounded as one stop).
    pub fn halt_all(&self, tenant: &str, names: &[String], why: &str) {
        let mut runs = Vec::new();
        let mut failed = Vec::new();
        for name in names {
            let key = (tenant.to_string(), name.clone());
            let progress = self.status(tenant, name).progress;
            if let Some(r) = self
                .pipelines
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key)
            {
                runs.push((key.clone(), r));
            }
            failed.push((
                key,
                Status {
                    state: "failed".into(),
                    last_error: Some(why.to_string()),
                    restarts: 0,
                    progress,
                },
            ));
        }
        self.stop_runs(runs);
        self.halted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(failed);
    }

    /// Stop everything (the service is shutting down), all together and
    /// bounded as one stop.
    pub fn stop_all(&self) {
        let all: Vec<(Key, Running)> = self
            .pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        self.stop_runs(all);
    }
}
