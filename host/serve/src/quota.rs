//! A tenant's data quota: the bytes under its data root (checkpoints,
//! embedded logs, file output). Checked when a pipeline starts, and by a
//! watcher while pipelines run: a tenant over its quota has its pipelines
//! stopped (shown `failed`, with the figures) rather than fill the disk its
//! neighbours share.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::AppState;
use super::error::ApiError;
use super::store::TenantRow;

/// How often the watcher measures tenants with running pipelines, unless
/// `weir serve --quota-interval` says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// One lock per tenant, held from a quota's check to the insert it allows
/// (a pipeline, a component), so parallel requests cannot all pass a check
/// that only one of them fits.
#[derive(Default)]
pub struct TenantLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl TenantLocks {
    pub async fn lock(&self, tenant: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tenant.to_string())
            .or_default()
            .clone();
        lock.lock_owned().await
    }

    /// Drop a deleted tenant's lock.
    pub fn forget(&self, tenant: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant);
    }
}

/// Bytes of the regular files under `dir` (symlinks are not followed).
pub fn data_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0u64;
    for e in rd.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            total = total.saturating_add(data_bytes(&e.path()));
        } else if meta.is_file() {
            total = total.saturating_add(meta.len());
        }
    }
    total
}

/// The refusal when `t` is over its data quota.
pub fn over(state: &AppState, t: &TenantRow) -> Option<String> {
    let used = data_bytes(&super::confine::TenantRoot::path_of(&state.data, &t.name));
    (used > t.max_data_bytes).then(|| {
        format!(
            "tenant `{}` holds {used} bytes of data, over its quota of {} (max-data-bytes); delete pipelines with ?purge=true or output, or ask the admin for more",
            t.name, t.max_data_bytes
        )
    })
}

/// Refuse to start a pipeline of a tenant over its quota.
pub fn check(state: &AppState, t: &TenantRow) -> Result<(), ApiError> {
    match over(state, t) {
        None => Ok(()),
        Some(why) => Err(ApiError::quota(why)),
    }
}

/// Every `interval`, stop the running pipelines of tenants over their data
/// quota. Runs until the process ends.
pub fn watch(state: AppState, interval: Duration) {
    loop {
        std::thread::sleep(interval);
        let mut tenants: Vec<String> = state
            .supervisor
            .running()
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        tenants.sort();
        tenants.dedup();
        for name in tenants {
            let Ok(Some(t)) = state.store.tenant(&name) else {
                continue;
            };
            let Some(why) = over(&state, &t) else {
                continue;
            };
            tracing::warn!(tenant = %name, "{why}");
            let mine: Vec<String> = state
                .supervisor
                .running()
                .into_iter()
                .filter(|(tenant, _)| *tenant == name)
                .map(|(_, pipeline)| pipeline)
                .collect();
            // Bounded (interrupting guests if need be): one tenant's
            // pipelines cannot hold up every other tenant's enforcement.
            state.supervisor.halt_all(&name, &mine, &why);
            for pipeline in &mine {
                state.store.event(Some(&name), pipeline, "failed", &why);
            }
        }
    }
}
