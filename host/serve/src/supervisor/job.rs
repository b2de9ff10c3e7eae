//! One pipeline's supervision: run its query, restart it from the
//! checkpoint after failures worth retrying (with doubling backoff), record
//! what it reports.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::Status;
use crate::store::Store;
use weir_engine::{EngineError, Progress};
use weir_metrics::{Metrics, PipelineLabels};
use weir_pipeline::{BuildError, Query};

/// Progress reports kept per pipeline (Spark keeps 100 too).
pub const RECENT_PROGRESS: usize = 100;

/// First wait before restarting a failed pipeline; doubled per failure in
/// a row, at most [`MAX_BACKOFF`].
pub(super) const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Whether a restart would only fail the same way: the pipeline's own
/// configuration, a record the error policy says to stop at, a guest that
/// is broken or keeps crashing, a checkpoint that does not fit. Sources,
/// sinks and checkpoint I/O failing is worth retrying.
pub fn permanent(e: &EngineError) -> bool {
    use weir_engine::CheckpointError;
    match e {
        EngineError::Source { .. } | EngineError::Sink { .. } => false,
        EngineError::Checkpoint(CheckpointError::Io { .. } | CheckpointError::InUse(_)) => false,
        EngineError::Transform { err, .. } | EngineError::StatePartition { err, .. } => {
            !err.poisons_instance()
        }
        _ => true,
    }
}

/// How much lower than the API's threads pipelines run (`nice`): busy
/// pipelines must not make status calls and `/metrics` scrapes wait for
/// CPU. Threads a pipeline starts inherit it (Linux keeps nice per thread).
const PIPELINE_NICE: libc::c_int = 5;

pub(super) fn lower_priority() {
    // SAFETY: plain syscalls on the calling thread only.
    unsafe {
        let tid = libc::gettid();
        let now = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, now + PIPELINE_NICE) != 0 {
            tracing::debug!(
                "serve: pipeline thread keeps its priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// One pipeline's supervision thread.
pub(super) struct Job {
    pub status: Arc<Mutex<Status>>,
    pub stop: Arc<AtomicBool>,
    pub query_stop: Arc<Mutex<Arc<AtomicBool>>>,
    pub store: Arc<Store>,
    pub tenant: String,
    pub pipeline: String,
    pub recent: Arc<Mutex<VecDeque<Progress>>>,
    pub metrics: Arc<Metrics>,
    /// The tenant's batches and restarts (for the data quota's watcher).
    pub activity: Arc<std::sync::atomic::AtomicU64>,
}

impl Job {
    pub(super) fn set(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Record a batch's progress where the API and `/metrics` read it.
    pub(super) fn report(&self, labels: &PipelineLabels, p: &Progress) {
        self.activity.fetch_add(1, Ordering::Relaxed);
        self.metrics.record(labels, p);
        {
            let mut r = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if r.len() == RECENT_PROGRESS {
                r.pop_front();
            }
            r.push_back(p.clone());
        }
        let mut s = self.status.lock().unwrap_or_else(|e| e.into_inner());
        s.progress = Some(p.clone());
        if s.state == "restarting" {
            s.state = "running".into();
        }
    }

    pub(super) fn labels(&self) -> PipelineLabels {
        PipelineLabels {
            tenant: self.tenant.clone(),
            pipeline: self.pipeline.clone(),
        }
    }

    /// Run the query; after a failure worth retrying, wait (twice as long
    /// each time in a row) and run it again from its checkpoint.
    pub fn supervise(self, query: Query, build: impl Fn() -> Result<Query, BuildError>) {
        let labels = self.labels();
        self.metrics.set_running(&labels, true);
        // Started from a thread of the tenant's executor, this thread
        // already runs at the pipelines' lower priority.
        self.run(query, build, &labels);
        self.metrics.set_running(&labels, false);
    }

    fn run(
        &self,
        query: Query,
        build: impl Fn() -> Result<Query, BuildError>,
        labels: &PipelineLabels,
    ) {
        let mut backoff = FIRST_BACKOFF;
        let mut query = query;
        loop {
            let started = std::time::Instant::now();
            let run = query.run(&mut |p| self.report(labels, p));
            let err = match run {
                Ok(_) => {
                    self.set(|s| s.state = "stopped".into());
                    return;
                }
                Err(e) => e,
            };
            // Release its checkpoint (and sinks) before anything restarts it.
            drop(query);
            let why = err.to_string();
            // A run that lasted starts the backoff over.
            if started.elapsed() > MAX_BACKOFF {
                backoff = FIRST_BACKOFF;
            }
            // Stopped by request: the error (often the interrupted guest's)
            // is the stop's doing, and the checkpoint re-runs the batch.
            if self.stop.load(Ordering::Relaxed) {
                self.set(|s| s.state = "stopped".into());
                return;
            }
            if permanent(&err) {
                self.failed(&why);
                return;
            }
            loop {
                self.restarting(&why, backoff);
                if !self.wait(backoff) {
                    self.set(|s| s.state = "stopped".into());
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                match build() {
                    Ok(q) => {
                        query = q;
                        break;
                    }
                    // Building refused for good (e.g. its settings no longer
                    // match the checkpoint): stop here.
                    Err(BuildError::Engine(e)) if permanent(&e) => {
                        self.failed(&e.to_string());
                        return;
                    }
                    Err(e) => tracing::warn!(
                        tenant = %self.tenant,
                        pipeline = %self.pipeline,
                        "restart failed: {e}"
                    ),
                }
            }
            self.watch_stop(&query);
        }
    }

    /// Failed for good: say why where the API and the events show it.
    pub(super) fn failed(&self, why: &str) {
        self.set(|s| {
            s.state = "failed".into();
            s.last_error = Some(why.to_string());
        });
        self.store
            .event(Some(&self.tenant), &self.pipeline, "failed", why);
    }

    /// To be restarted after `backoff`, after failing with `why`.
    pub(super) fn restarting(&self, why: &str, backoff: Duration) {
        self.activity.fetch_add(1, Ordering::Relaxed);
        self.metrics.restarted(&self.labels());
        self.set(|s| {
            s.state = "restarting".into();
            s.last_error = Some(why.to_string());
            s.restarts += 1;
        });
        self.store.event(
            Some(&self.tenant),
            &self.pipeline,
            "restarting",
            &format!("in {backoff:?} after: {why}"),
        );
    }

    /// Make `query` the one a stop stops (and stop it now if a stop came
    /// while it was being built).
    pub(super) fn watch_stop(&self, query: &Query) {
        let handle = query.stop_handle();
        *self.query_stop.lock().unwrap_or_else(|e| e.into_inner()) = handle.clone();
        if self.stop.load(Ordering::Relaxed) {
            handle.store(true, Ordering::Relaxed);
        }
    }

    /// Sleep `d` unless stopped first; false when stopped.
    fn wait(&self, d: Duration) -> bool {
        let until = std::time::Instant::now() + d;
        while std::time::Instant::now() < until {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        !self.stop.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_engine::{CheckpointError, ConnectorError, TransformError};

    #[test]
    fn only_failures_a_restart_can_cure_are_retried() {
        let io = EngineError::Sink {
            name: "files:out".into(),
            err: ConnectorError::new("out/_weir/manifest/3: Not a directory"),
        };
        assert!(!permanent(&io));
        let trap = EngineError::Transform {
            source_name: "log:in".into(),
            partition: 0,
            err: TransformError::Trap {
                message: "x".into(),
            },
        };
        assert!(!permanent(&trap));
        let crash_loop = EngineError::Transform {
            source_name: "log:in".into(),
            partition: 0,
            err: TransformError::CrashLoop {
                failures: 10,
                window: Duration::from_secs(60),
                last: "x".into(),
            },
        };
        assert!(permanent(&crash_loop));
        assert!(permanent(&EngineError::Unrouted("eu".into())));
        assert!(permanent(&EngineError::Checkpoint(
            CheckpointError::Mismatch("m".into())
        )));
    }
}
