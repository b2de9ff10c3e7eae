//! One node's own pipelines: started where they are stored, restarted
//! when their tenant's quotas change, resumed when the service starts.
//! (In a cluster, `cluster::placement` does this.)

use super::super::AppState;
use super::super::store::{PipelineRow, TenantRow};
use super::startable;

/// After a tenant's quotas changed: its running pipelines start again
/// under them (or stop, failed, when they no longer fit).
pub async fn restart_running(state: &AppState, t: &TenantRow) {
    // In a cluster each pipeline's node restarts it (placement sees the
    // tenant changed).
    if state.cluster.is_some() {
        state.placed();
        return;
    }
    let rows = match state.store.pipelines(Some(&t.name)) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("serve: listing pipelines of {}: {e}", t.name);
            return;
        }
    };
    let (state, t) = (state.clone(), t.clone());
    let _ = tokio::task::spawn_blocking(move || {
        for p in rows.iter().filter(|p| p.desired == "running") {
            start_or_halt(&state, &t, p, "restarted");
        }
    })
    .await;
}

/// Start a stored pipeline, or mark it failed with the reason it cannot.
pub(super) fn start_or_halt(state: &AppState, t: &TenantRow, p: &PipelineRow, event: &str) {
    let started = (|| -> Result<(), String> {
        let spec = startable(state, t, p)?;
        if let Some(why) = super::super::quota::over(state, t) {
            return Err(why);
        }
        state
            .supervisor
            .start(&state.store, t, &p.name, &spec)
            .map_err(|e| e.why)
    })();
    match started {
        Ok(()) => state.store.event(Some(&p.tenant), &p.name, event, ""),
        Err(e) => {
            state.supervisor.halt(&p.tenant, &p.name, &e);
            state.store.event(Some(&p.tenant), &p.name, "failed", &e);
        }
    }
}

/// At start: every pipeline that should run, runs again from its checkpoint.
pub fn resume_all(state: &AppState) {
    let rows = match state.store.pipelines(None) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("serve: listing pipelines to resume: {e}");
            return;
        }
    };
    for p in rows.into_iter().filter(|p| p.desired == "running") {
        match state.store.tenant(&p.tenant) {
            Ok(Some(t)) => start_or_halt(state, &t, &p, "resumed"),
            Ok(None) => {}
            Err(e) => tracing::error!("serve: reading tenant {}: {e}", p.tenant),
        }
    }
}
