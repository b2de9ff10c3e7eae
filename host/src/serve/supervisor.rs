//! The pipelines `weir serve` runs: one thread per running pipeline (its
//! query's own threads below it), a shared memory quota and CPU share per
//! tenant, and what each last reported.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

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
    /// `running`, `stopped` or `failed`.
    pub state: String,
    pub last_error: Option<String>,
    /// Its newest progress report.
    pub progress: Option<Progress>,
}

struct Running {
    stop: Arc<AtomicBool>,
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
        let mut query = build_query(&self.runtime, spec, Some(self.tenant(t)), None, false)
            .map_err(|e| e.to_string())?;
        let stop = query.stop_handle();
        let status = Arc::new(Mutex::new(Status {
            state: "running".into(),
            ..Status::default()
        }));
        let (st, store, tenant, pipeline) = (
            status.clone(),
            store.clone(),
            t.name.clone(),
            name.to_string(),
        );
        let handle = std::thread::Builder::new()
            .name(format!("weir-pipeline-{tenant}-{pipeline}"))
            .spawn(move || {
                let result = query.run(&mut |p| {
                    st.lock().unwrap_or_else(|e| e.into_inner()).progress = Some(p.clone());
                });
                let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
                match result {
                    Ok(_) => {
                        s.state = "stopped".into();
                        store.event(Some(&tenant), &pipeline, "stopped", "");
                    }
                    Err(e) => {
                        s.state = "failed".into();
                        s.last_error = Some(e.to_string());
                        store.event(Some(&tenant), &pipeline, "failed", &e.to_string());
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        self.pipelines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                (t.name.clone(), name.to_string()),
                Running {
                    stop,
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
