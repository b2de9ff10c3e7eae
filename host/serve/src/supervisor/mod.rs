//! The pipelines `weir serve` runs: micro-batch pipelines take turns on
//! their tenant's few threads and hold none while idle (see `task.rs`),
//! continuous ones have threads of their own; a shared memory quota and
//! CPU share per tenant, and what each last reported.

mod deadlines;
mod executor;
mod job;
mod phases;
mod stopping;
mod task;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::confine::TenantRoot;
use super::fence::Fence;
use super::store::{Store, TenantRow};
use weir_engine::Progress;
use weir_metrics::{Metrics, PipelineLabels};
use weir_pipeline::spec::Pipeline;
use weir_pipeline::{BuildError, GuestScope, build_query};
use weir_runtime::tenant::{Scheduler, Tenant};
use weir_runtime::{Abort, Runtime};

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

use stopping::Running;

/// Why a pipeline did not start, and whether trying again may do (its
/// checkpoint still held by an earlier run, Kafka or the store not
/// reached) or would only fail the same way (its spec, its component, its
/// checkpoint's rules).
#[derive(Debug, Clone, PartialEq)]
pub struct NotStarted {
    pub why: String,
    pub retry: bool,
}

impl NotStarted {
    fn of(e: &BuildError) -> NotStarted {
        use weir_engine::CheckpointError;
        let retry = match e {
            BuildError::Engine(e) => !job::permanent(e),
            BuildError::Checkpoint(CheckpointError::InUse(_) | CheckpointError::Io { .. }) => true,
            BuildError::Connector(_) => true,
            _ => false,
        };
        NotStarted {
            why: e.to_string(),
            retry,
        }
    }

    fn final_(why: impl Into<String>) -> NotStarted {
        NotStarted {
            why: why.into(),
            retry: false,
        }
    }
}

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

type Key = (String, String);
/// (guest memory, CPU weight) a tenant's shared quota was made for.
type Quota = (u64, u64);

pub struct Supervisor {
    runtime: Arc<Runtime>,
    scheduler: Arc<Scheduler>,
    /// Each tenant's shared quota, with the (memory, CPU weight) it was
    /// made for: a changed quota makes a new one.
    tenants: Mutex<HashMap<String, (Quota, Arc<Tenant>)>>,
    /// Why pipelines that were stopped by the service (not by their owner)
    /// stopped.
    halted: Mutex<HashMap<Key, Status>>,
    pipelines: Mutex<HashMap<Key, Running>>,
    /// Each tenant's executor: the threads its pipelines take turns on.
    executors: Mutex<HashMap<String, Arc<executor::Executor>>>,
    /// Each tenant's batches and restarts so far: its data can only have
    /// grown if this moved (see `quota::watch`).
    activity: Mutex<HashMap<String, Arc<AtomicU64>>>,
    /// Runs that outlived their stop's deadlines, left to end on their own.
    stopping: Mutex<HashMap<Key, Running>>,
    /// Recent progress per pipeline, kept while it is stopped.
    recent: Mutex<HashMap<Key, Arc<Mutex<VecDeque<Progress>>>>>,
    pub metrics: Arc<Metrics>,
    /// The service's data directory (tenants' roots, components).
    data: std::path::PathBuf,
}

impl Supervisor {
    pub fn new(runtime: Arc<Runtime>, data: &std::path::Path) -> Supervisor {
        let scheduler = Scheduler::new(None, runtime.epoch_tick());
        // Started here, unconfined: threads they start must not inherit a
        // tenant's fence.
        executor::start();
        deadlines::start();
        Supervisor {
            runtime,
            scheduler,
            tenants: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            executors: Mutex::new(HashMap::new()),
            activity: Mutex::new(HashMap::new()),
            stopping: Mutex::new(HashMap::new()),
            recent: Mutex::new(HashMap::new()),
            halted: Mutex::new(HashMap::new()),
            metrics: Arc::new(Metrics::new()),
            data: data.to_path_buf(),
        }
    }

    /// Tenant `t`'s shared memory quota and CPU share (made for its current
    /// quotas), which its pipelines and replays run under.
    pub fn tenant_quota(&self, t: &TenantRow) -> Arc<Tenant> {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let made_for = (t.max_memory, t.cpu_weight);
        match tenants.get(&t.name) {
            Some((m, q)) if *m == made_for => q.clone(),
            _ => {
                let q = Tenant::new(
                    &t.name,
                    t.max_memory.min(usize::MAX as u64) as usize,
                    t.cpu_weight.min(u32::MAX as u64) as u32,
                    &self.scheduler,
                );
                tenants.insert(t.name.clone(), (made_for, q.clone()));
                q
            }
        }
    }

    /// Start `spec` as tenant `t`'s pipeline `name` (stopping the copy that
    /// runs, if any): it resumes from its checkpoint.
    pub fn start(
        &self,
        store: &Arc<Store>,
        t: &TenantRow,
        name: &str,
        spec: &Pipeline,
    ) -> Result<(), NotStarted> {
        self.start_with(store, t, name, spec, false)
    }

    /// [`Self::start`], with `upgrade` as `weir run --upgrade`: a changed
    /// component keeps the checkpoint's state and position.
    pub fn start_with(
        &self,
        store: &Arc<Store>,
        t: &TenantRow,
        name: &str,
        spec: &Pipeline,
        upgrade: bool,
    ) -> Result<(), NotStarted> {
        self.stop(&t.name, name);
        let key = (t.name.clone(), name.to_string());
        if self.still_stopping(&key) {
            return Err(NotStarted {
                why: format!(
                    "pipeline `{name}` is still stopping (its previous run has not ended); try again shortly"
                ),
                retry: true,
            });
        }
        let runtime = self.runtime.clone();
        let abort = Abort::new();
        let guests = GuestScope {
            tenant: Some(self.tenant_quota(t)),
            abort: Some(abort.clone()),
        };
        let build = {
            let spec = spec.clone();
            move || build_query(&runtime, &spec, guests.clone(), None, upgrade)
        };
        let stop = Arc::new(AtomicBool::new(false));
        let query_stop = Arc::new(Mutex::new(Arc::new(AtomicBool::new(false))));
        let status = Arc::new(Mutex::new(Status {
            state: "running".into(),
            ..Status::default()
        }));
        super::logs::register(&t.name, name);
        let recent = self
            .recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((t.name.clone(), name.to_string()))
            .or_default()
            .clone();
        let job = job::Job {
            status: status.clone(),
            stop: stop.clone(),
            query_stop: query_stop.clone(),
            store: store.clone(),
            tenant: t.name.clone(),
            pipeline: name.to_string(),
            recent,
            metrics: self.metrics.clone(),
            activity: self.activity_of(&t.name),
        };
        // The query is built on a thread of the tenant's executor, inside
        // its fence, so that every thread it starts is fenced too; the
        // build's outcome comes back here.
        let (built, ready) = std::sync::mpsc::sync_channel::<Result<(), NotStarted>>(1);
        let task = task::Task::start(self.executor(&t.name), job, Box::new(build), built);
        let outcome = ready.recv().unwrap_or_else(|_| {
            Err(NotStarted::final_(
                "the pipeline ended while it was being built",
            ))
        });
        outcome?;
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                (t.name.clone(), name.to_string()),
                Running {
                    stop,
                    query_stop,
                    abort,
                    task,
                    status,
                },
            );
        Ok(())
    }

    fn activity_of(&self, tenant: &str) -> Arc<AtomicU64> {
        self.activity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tenant.to_string())
            .or_default()
            .clone()
    }

    /// How many batches and restarts tenant `tenant`'s pipelines have had
    /// (in this process).
    pub fn activity(&self, tenant: &str) -> u64 {
        self.activity_of(tenant).load(Ordering::Relaxed)
    }

    /// Tenant `tenant`'s executor (its pipelines' threads, fenced into its
    /// data), made on first use.
    fn executor(&self, tenant: &str) -> Arc<executor::Executor> {
        self.executors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tenant.to_string())
            .or_insert_with(|| {
                let fence = Fence::for_tenant(
                    &TenantRoot::path_of(&self.data, tenant),
                    &self.data.join("components"),
                    self.runtime.cache_dir(),
                );
                executor::Executor::new(tenant, fence)
            })
            .clone()
    }

    /// Drop what is kept about a deleted tenant (its quota, its failed
    /// pipelines' statuses).
    pub fn forget_tenant(&self, tenant: &str) {
        self.tenants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant);
        self.executors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant);
        self.halted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(t, _), _| t != tenant);
    }

    pub fn status(&self, tenant: &str, name: &str) -> Status {
        let key = (tenant.to_string(), name.to_string());
        let pipelines = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = pipelines.get(&key) {
            return r.status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        }
        drop(pipelines);
        if self.still_stopping(&key) {
            return Status {
                state: "stopping".into(),
                ..Status::default()
            };
        }
        let halted = self.halted.lock().unwrap_or_else(|e| e.into_inner());
        halted.get(&key).cloned().unwrap_or_else(|| Status {
            state: "stopped".into(),
            ..Status::default()
        })
    }

    /// The pipelines running now, as (tenant, name).
    pub fn running(&self) -> Vec<(String, String)> {
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(_, r)| {
                let s = r.status.lock().unwrap_or_else(|e| e.into_inner());
                s.state == "running" || s.state == "restarting"
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The kept progress reports of a pipeline with a batch id above
    /// `since`, oldest first.
    pub fn progress_since(&self, tenant: &str, name: &str, since: Option<u64>) -> Vec<Progress> {
        let recent = self
            .recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(tenant.to_string(), name.to_string()))
            .cloned();
        let Some(r) = recent else { return vec![] };
        let r = r.lock().unwrap_or_else(|e| e.into_inner());
        r.iter()
            .filter(|p| since.is_none_or(|s| p.batch_id > s))
            .cloned()
            .collect()
    }

    /// Stop a deleted pipeline and drop what was kept about it.
    pub fn forget(&self, tenant: &str, name: &str) {
        self.stop(tenant, name);
        self.recent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(tenant.to_string(), name.to_string()));
        self.metrics.forget(&PipelineLabels {
            tenant: tenant.to_string(),
            pipeline: name.to_string(),
        });
        super::logs::forget(tenant, name);
    }
}
