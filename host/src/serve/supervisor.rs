//! The pipelines `weir serve` runs: one thread per running pipeline (its
//! query's own threads below it), a shared memory quota and CPU share per
//! tenant, and what each last reported.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

use std::time::Duration;

use super::store::{Store, TenantRow};
use crate::engine::{EngineError, Progress};
use crate::pipeline::{BuildError, build_query};
use crate::runtime::Runtime;
use crate::runtime::tenant::{Scheduler, Tenant};
use crate::spec::Pipeline;

/// What a pipeline is doing, as the API shows it.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Status {
    /// `running`, `restarting` (waiting to retry a failure), `stopped` or
    /// `failed` (a failure a restart would only repeat).
    pub state: String,
    pub last_error: Option<String>,
    /// Restarts after failures since it was started.
    pub restarts: u64,
    /// Its newest progress report.
    pub progress: Option<Progress>,
}

/// First wait before restarting a failed pipeline; doubled per failure in
/// a row, at most [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Whether a restart would only fail the same way: the pipeline's own
/// configuration, a record the error policy says to stop at, a guest that
/// is broken or keeps crashing, a checkpoint that does not fit. Sources,
/// sinks and checkpoint I/O failing is worth retrying.
pub fn permanent(e: &EngineError) -> bool {
    use crate::engine::CheckpointError;
    match e {
        EngineError::Source { .. } | EngineError::Sink { .. } => false,
        EngineError::Checkpoint(CheckpointError::Io { .. }) => false,
        EngineError::Transform { err, .. } | EngineError::StatePartition { err, .. } => {
            !err.poisons_instance()
        }
        _ => true,
    }
}

struct Running {
    /// Raised to stop the pipeline for good (no more restarts).
    stop: Arc<AtomicBool>,
    /// The stop flag of the query that runs now.
    query_stop: Arc<Mutex<Arc<AtomicBool>>>,
    handle: Option<JoinHandle<()>>,
    status: Arc<Mutex<Status>>,
}

pub struct Supervisor {
    runtime: Arc<Runtime>,
    scheduler: Arc<Scheduler>,
    tenants: Mutex<HashMap<String, Arc<Tenant>>>,
    pipelines: Mutex<HashMap<(String, String), Running>>,
}

impl Supervisor {
    pub fn new(runtime: Arc<Runtime>) -> Supervisor {
        let scheduler = Scheduler::new(None, runtime.epoch_tick());
        Supervisor {
            runtime,
            scheduler,
            tenants: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
        }
    }

    fn tenant(&self, t: &TenantRow) -> Arc<Tenant> {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        tenants
            .entry(t.name.clone())
            .or_insert_with(|| {
                Tenant::new(
                    &t.name,
                    t.max_memory as usize,
                    t.cpu_weight.min(u32::MAX as u64) as u32,
                    &self.scheduler,
                )
            })
            .clone()
    }

    /// Start `spec` as tenant `t`'s pipeline `name` (stopping the copy that
    /// runs, if any): it resumes from its checkpoint.
    pub fn start(
        &self,
        store: &Arc<Store>,
        t: &TenantRow,
        name: &str,
        spec: &Pipeline,
    ) -> Result<(), String> {
        self.stop(&t.name, name);
        let runtime = self.runtime.clone();
        let tenant_quota = self.tenant(t);
        let build = {
            let spec = spec.clone();
            move || build_query(&runtime, &spec, Some(tenant_quota.clone()), None, false)
        };
        let query = build().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let query_stop = Arc::new(Mutex::new(query.stop_handle()));
        let status = Arc::new(Mutex::new(Status {
            state: "running".into(),
            ..Status::default()
        }));
        let job = Job {
            status: status.clone(),
            stop: stop.clone(),
            query_stop: query_stop.clone(),
            store: store.clone(),
            tenant: t.name.clone(),
            pipeline: name.to_string(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("weir-pipeline-{}-{name}", t.name))
            .spawn(move || job.supervise(query, build))
            .map_err(|e| e.to_string())?;
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                (t.name.clone(), name.to_string()),
                Running {
                    stop,
                    query_stop,
                    handle: Some(handle),
                    status,
                },
            );
        Ok(())
    }

    /// Stop a pipeline after its current batch or epoch; waits for it.
    pub fn stop(&self, tenant: &str, name: &str) {
        let running = self
            .pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(tenant.to_string(), name.to_string()));
        if let Some(mut r) = running {
            r.stop.store(true, Ordering::Relaxed);
            r.query_stop
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .store(true, Ordering::Relaxed);
            if let Some(h) = r.handle.take() {
                let _ = h.join();
            }
        }
    }

    pub fn status(&self, tenant: &str, name: &str) -> Status {
        let pipelines = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        match pipelines.get(&(tenant.to_string(), name.to_string())) {
            Some(r) => r.status.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            None => Status {
                state: "stopped".into(),
                ..Status::default()
            },
        }
    }

    /// Stop everything (the service is shutting down).
    pub fn stop_all(&self) {
        let keys: Vec<(String, String)> = self
            .pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        for (t, n) in keys {
            self.stop(&t, &n);
        }
    }
}

/// One pipeline's supervision thread.
struct Job {
    status: Arc<Mutex<Status>>,
    stop: Arc<AtomicBool>,
    query_stop: Arc<Mutex<Arc<AtomicBool>>>,
    store: Arc<Store>,
    tenant: String,
    pipeline: String,
}

impl Job {
    fn set(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Run the query; after a failure worth retrying, wait (twice as long
    /// each time in a row) and run it again from its checkpoint.
    fn supervise(
        self,
        query: crate::pipeline::Query,
        build: impl Fn() -> Result<crate::pipeline::Query, BuildError>,
    ) {
        let mut backoff = FIRST_BACKOFF;
        let mut query = query;
        loop {
            let started = std::time::Instant::now();
            let run = query.run(&mut |p| {
                let mut s = self.status.lock().unwrap_or_else(|e| e.into_inner());
                s.progress = Some(p.clone());
                if s.state == "restarting" {
                    s.state = "running".into();
                }
            });
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
            if permanent(&err) || self.stop.load(Ordering::Relaxed) {
                self.set(|s| {
                    s.state = "failed".into();
                    s.last_error = Some(why.clone());
                });
                self.store
                    .event(Some(&self.tenant), &self.pipeline, "failed", &why);
                return;
            }
            loop {
                self.set(|s| {
                    s.state = "restarting".into();
                    s.last_error = Some(why.clone());
                    s.restarts += 1;
                });
                self.store.event(
                    Some(&self.tenant),
                    &self.pipeline,
                    "restarting",
                    &format!("in {backoff:?} after: {why}"),
                );
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
                        let why = e.to_string();
                        self.set(|s| {
                            s.state = "failed".into();
                            s.last_error = Some(why.clone());
                        });
                        self.store
                            .event(Some(&self.tenant), &self.pipeline, "failed", &why);
                        return;
                    }
                    Err(e) => tracing::warn!(
                        tenant = %self.tenant,
                        pipeline = %self.pipeline,
                        "restart failed: {e}"
                    ),
                }
            }
            let handle = query.stop_handle();
            *self.query_stop.lock().unwrap_or_else(|e| e.into_inner()) = handle.clone();
            // A stop raised while the new query was being built.
            if self.stop.load(Ordering::Relaxed) {
                handle.store(true, Ordering::Relaxed);
            }
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
    use crate::engine::{CheckpointError, ConnectorError, TransformError};

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
