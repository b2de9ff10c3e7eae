//! The pipelines `weir serve` runs: one thread per running pipeline (its
//! query's own threads below it), a shared memory quota and CPU share per
//! tenant, and what each last reported.

mod job;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

use super::metrics::{Metrics, PipelineLabels};
use super::store::{Store, TenantRow};
use crate::engine::Progress;
use crate::pipeline::build_query;
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

struct Running {
    /// Raised to stop the pipeline for good (no more restarts).
    stop: Arc<AtomicBool>,
    /// The stop flag of the query that runs now.
    query_stop: Arc<Mutex<Arc<AtomicBool>>>,
    handle: Option<JoinHandle<()>>,
    status: Arc<Mutex<Status>>,
}

pub use job::{RECENT_PROGRESS, permanent};

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
    /// Recent progress per pipeline, kept while it is stopped.
    recent: Mutex<HashMap<Key, Arc<Mutex<VecDeque<Progress>>>>>,
    pub metrics: Arc<Metrics>,
}

impl Supervisor {
    pub fn new(runtime: Arc<Runtime>) -> Supervisor {
        let scheduler = Scheduler::new(None, runtime.epoch_tick());
        Supervisor {
            runtime,
            scheduler,
            tenants: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            recent: Mutex::new(HashMap::new()),
            halted: Mutex::new(HashMap::new()),
            metrics: Arc::new(Metrics::new()),
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
    ) -> Result<(), String> {
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
    ) -> Result<(), String> {
        self.stop(&t.name, name);
        let runtime = self.runtime.clone();
        let tenant_quota = self.tenant_quota(t);
        let build = {
            let spec = spec.clone();
            move || build_query(&runtime, &spec, Some(tenant_quota.clone()), None, upgrade)
        };
        let query = build().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let query_stop = Arc::new(Mutex::new(query.stop_handle()));
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
        self.halted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(tenant.to_string(), name.to_string()));
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
        let key = (tenant.to_string(), name.to_string());
        let pipelines = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = pipelines.get(&key) {
            return r.status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        }
        let halted = self.halted.lock().unwrap_or_else(|e| e.into_inner());
        halted.get(&key).cloned().unwrap_or_else(|| Status {
            state: "stopped".into(),
            ..Status::default()
        })
    }

    /// Stop a pipeline for a reason of the service's (a quota): it shows as
    /// `failed` with `why` until it is started again.
    pub fn halt(&self, tenant: &str, name: &str, why: &str) {
        let progress = self.status(tenant, name).progress;
        self.stop(tenant, name);
        self.halted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                (tenant.to_string(), name.to_string()),
                Status {
                    state: "failed".into(),
                    last_error: Some(why.to_string()),
                    restarts: 0,
                    progress,
                },
            );
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

    /// Stop everything (the service is shutting down): every pipeline is
    /// told at once, then waited for, so an idle one's wait overlaps the
    /// others'.
    pub fn stop_all(&self) {
        let all: Vec<Running> = self
            .pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, r)| r)
            .collect();
        for r in &all {
            r.stop.store(true, Ordering::Relaxed);
            r.query_stop
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .store(true, Ordering::Relaxed);
        }
        for mut r in all {
            if let Some(h) = r.handle.take() {
                let _ = h.join();
            }
        }
    }
}
