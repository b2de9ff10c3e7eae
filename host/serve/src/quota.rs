//! A tenant's data quota: the bytes under its data root (checkpoints,
//! embedded logs, file output). Checked when a pipeline starts, and by a
//! watcher while pipelines run: a tenant over its quota has its pipelines
//! stopped (shown `failed`, with the figures) rather than fill the disk its
//! neighbours share.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
        // The entry's type comes with the directory listing: only files
        // need a stat of their own.
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            total = total.saturating_add(data_bytes(&e.path()));
        } else if kind.is_file() {
            let Ok(meta) = e.metadata() else { continue };
            total = total.saturating_add(meta.len());
        }
    }
    total
}

/// A start is decided on a measurement at most this old: a tenant
/// deploying thousands of pipelines would otherwise walk its whole data
/// tree once per deploy. It stays well inside `--quota-interval`, the
/// granularity the quota is enforced at while pipelines write.
const FRESH: Duration = Duration::from_secs(1);

/// Each tenant's data bytes and when they were measured.
#[derive(Default)]
pub struct Measured(Mutex<HashMap<String, (Instant, u64)>>);

impl Measured {
    /// `tenant`'s bytes under `root`, measured now unless a measurement
    /// younger than `fresh` is at hand.
    fn bytes(&self, tenant: &str, root: &Path, fresh: Duration) -> u64 {
        let known = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tenant)
            .copied();
        if let Some((at, bytes)) = known
            && at.elapsed() < fresh
        {
            return bytes;
        }
        let at = Instant::now();
        let bytes = data_bytes(root);
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tenant.to_string(), (at, bytes));
        bytes
    }

    /// Drop a deleted tenant's measurement.
    pub fn forget(&self, tenant: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tenant);
    }
}

/// The refusal when `t` is over its data quota (measured at most
/// [`FRESH`] ago).
pub fn over(state: &AppState, t: &TenantRow) -> Option<String> {
    over_within(state, t, FRESH)
}

fn over_within(state: &AppState, t: &TenantRow, fresh: Duration) -> Option<String> {
    let root = super::confine::TenantRoot::path_of(&state.data, &t.name);
    let used = state.data_usage.bytes(&t.name, &root, fresh);
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

/// A tenant whose pipelines ran no batch since its data was last measured
/// is measured again only after this many intervals: only its pipelines
/// write under its root, and ten thousand idle pipelines would otherwise
/// be walked every interval. The occasional walk still sees what a run
/// that failed before its report wrote.
const UNCHANGED_EVERY: u32 = 10;

/// Every `interval`, stop the running pipelines of tenants over their data
/// quota. Runs until the process ends.
pub fn watch(state: AppState, interval: Duration) {
    // Per tenant: its activity when last measured, and when.
    let mut measured: HashMap<String, (u64, Instant)> = HashMap::new();
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
        measured.retain(|t, _| tenants.contains(t));
        for name in tenants {
            let activity = state.supervisor.activity(&name);
            if let Some((seen, at)) = measured.get(&name)
                && *seen == activity
                && at.elapsed() < interval.saturating_mul(UNCHANGED_EVERY)
            {
                continue;
            }
            let Ok(Some(t)) = state.store.tenant(&name) else {
                continue;
            };
            measured.insert(name.clone(), (activity, Instant::now()));
            let Some(why) = over_within(&state, &t, Duration::ZERO) else {
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
