//! A tenant's data quota: the bytes under its data root (checkpoints,
//! embedded logs, file output). Checked when a pipeline starts, and by a
//! watcher while pipelines run: a tenant over its quota has its pipelines
//! stopped (shown `failed`, with the figures) rather than fill the disk its
//! neighbours share.

use std::path::Path;
use std::time::Duration;

use super::AppState;
use super::error::ApiError;
use super::store::TenantRow;

/// How often the watcher measures tenants with running pipelines, unless
/// `weir serve --quota-interval` says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

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
    let used = data_bytes(&super::confine::tenant_root(&state.data, &t.name));
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
            for (tenant, pipeline) in state.supervisor.running() {
                if tenant == name {
                    state.supervisor.halt(&tenant, &pipeline, &why);
                    state.store.event(Some(&tenant), &pipeline, "failed", &why);
                }
            }
        }
    }
}
