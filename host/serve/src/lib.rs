//! `weir serve`: weir as a service. An HTTP API (axum on tokio; the engine
//! keeps its own threads) over an embedded SQLite store in the data
//! directory, with admin and per-tenant bearer tokens: tenants, their
//! components and their pipelines (run by `supervisor`, confined by
//! `confine`). README "Service" says what it does today.

mod auth;
mod catalog;
mod cluster;
mod components;
mod confine;
mod dashboard;
mod edge;
mod error;
mod fence;
mod logs;
mod pipelines;
mod quota;
mod rates;
mod replay;
mod reports;
mod store;
mod supervisor;
mod tenants;
mod view;

pub use catalog::Catalog;
pub use cluster::{Cluster, ClusterConfig};
pub use edge::EdgeLimits;
pub use fence::kernel_abi;
pub use logs::GuestLogLayer;
pub use quota::DEFAULT_INTERVAL as DEFAULT_QUOTA_INTERVAL;
pub use supervisor::Supervisor;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};

use error::ApiError;
use store::Store;
use weir_runtime::Runtime;

/// Largest component upload unless `--max-component-size` says otherwise.
pub const DEFAULT_MAX_COMPONENT_SIZE: usize = 64 << 20;

/// Largest request body of every route but uploads (pipeline files, JSON).
pub const MAX_REQUEST_BODY: usize = 1 << 20;

/// Shared by every request.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    /// Where writes go: this process's store, or the cluster's config log.
    pub catalog: Arc<Catalog>,
    /// This node's part in a cluster (`weir serve --cluster`).
    pub cluster: Option<Arc<Cluster>>,
    pub runtime: Arc<Runtime>,
    /// The data directory: `weir.db`, `components/`, `tmp/`.
    pub data: PathBuf,
    pub max_component_size: usize,
    /// How often running tenants' data is measured against their quota.
    pub quota_interval: std::time::Duration,
    pub supervisor: Arc<supervisor::Supervisor>,
    /// Held from a tenant's quota check to the insert it allows.
    pub quota_locks: Arc<quota::TenantLocks>,
    /// Each tenant's data bytes as last measured.
    pub data_usage: Arc<quota::Measured>,
    /// Each tenant's API request rate.
    pub rates: Arc<rates::RequestRates>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: the store: {err}")]
    Store { path: PathBuf, err: rusqlite::Error },
    #[error("cluster: {0}")]
    Cluster(String),
    #[error("cannot listen on {addr}: {err}")]
    Listen {
        addr: SocketAddr,
        err: std::io::Error,
    },
}

impl AppState {
    /// In a cluster, have placement look at the store now (a write
    /// changed what should run).
    pub fn placed(&self) {
        if let Some(c) = &self.cluster {
            c.wake.now();
        }
    }

    /// [`Catalog::write`] off the async workers (in a cluster it waits on
    /// Kafka).
    pub async fn write<T: Send + 'static>(
        &self,
        decide: catalog::Decide<T>,
    ) -> error::ApiResult<T> {
        let st = self.clone();
        tokio::task::spawn_blocking(move || st.catalog.write(&st.store, decide))
            .await
            .map_err(ApiError::internal)?
    }

    /// Tenant `tenant`'s quota lock (see `quota::TenantLocks`).
    pub async fn tenant_lock(&self, tenant: &str) -> tokio::sync::OwnedMutexGuard<()> {
        self.quota_locks.lock(tenant).await
    }

    /// Start (or restart) tenant `t`'s pipeline off the async workers:
    /// building it loads and instantiates its component.
    pub async fn start_pipeline(
        &self,
        t: store::TenantRow,
        name: String,
        spec: weir_pipeline::spec::Pipeline,
        upgrade: bool,
    ) -> error::ApiResult<()> {
        let st = self.clone();
        let t_name = t.name.clone();
        tokio::task::spawn_blocking(move || {
            st.supervisor
                .start_with(&st.store, &t, &name, &spec, upgrade)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| {
            let root = confine::TenantRoot::shown(&self.data, &t_name);
            ApiError::bad_request(root.redact(&e.why))
        })
    }

    /// Stop pipelines after their current batch or epoch, off the async
    /// workers (it waits for them).
    pub async fn stop_pipelines(&self, tenant: &str, names: Vec<String>) -> error::ApiResult<()> {
        let (st, tenant) = (self.clone(), tenant.to_string());
        tokio::task::spawn_blocking(move || {
            for n in names {
                st.supervisor.stop(&tenant, &n);
            }
        })
        .await
        .map_err(ApiError::internal)
    }

    /// Stop pipelines that are being deleted and drop their progress,
    /// metrics and logs.
    pub async fn forget_pipelines(&self, tenant: &str, names: Vec<String>) -> error::ApiResult<()> {
        let (st, tenant) = (self.clone(), tenant.to_string());
        tokio::task::spawn_blocking(move || {
            for n in names {
                st.supervisor.forget(&tenant, &n);
            }
        })
        .await
        .map_err(ApiError::internal)
    }
}

/// Open (creating) the data directory and its store.
pub fn open(data: &std::path::Path) -> Result<Store, ServeError> {
    // Uploads and replays interrupted by a crash left their scratch here.
    let tmp = data.join("tmp");
    match std::fs::remove_dir_all(&tmp) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            return Err(ServeError::Io { path: tmp, err });
        }
        _ => {}
    }
    for d in [
        data.to_path_buf(),
        data.join("components"),
        data.join("tmp"),
    ] {
        // Named on disk before anything in them counts on them.
        weir_engine::durable::create_dir_all(&d).map_err(|err| ServeError::Io { path: d, err })?;
    }
    Store::open(data).map_err(|err| ServeError::Store {
        path: data.join("weir.db"),
        err,
    })
}

/// Issue a new admin token and return it (the only time it is shown):
/// with `replace`, in place of any earlier one; otherwise only if there is
/// none yet (of several cluster nodes started at once, one issues it).
pub fn issue_admin_token(
    catalog: &Catalog,
    store: &Store,
    replace: bool,
) -> Result<Option<String>, error::ApiError> {
    catalog.write(
        store,
        Box::new(move |store: &Store| {
            if !replace && store.has_admin()? {
                return Ok((vec![], None));
            }
            let token = auth::new_token();
            let change = catalog::Change::Admin {
                token_hash: auth::hash(&token),
            };
            Ok((vec![change], Some(token)))
        }),
    )
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(dashboard::index))
        .route("/style.css", get(dashboard::style))
        .route("/{script}", get(dashboard::script))
        .route(
            "/healthz",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .route("/v1/whoami", get(auth::whoami))
        .route("/v1/tenants", post(tenants::create).get(tenants::list))
        .route(
            "/v1/tenants/{name}",
            delete(tenants::delete).patch(tenants::update),
        )
        .route("/v1/tenants/{name}/token", post(tenants::rotate))
        .route(
            "/v1/components",
            post(components::upload)
                .layer(DefaultBodyLimit::disable())
                .get(components::list),
        )
        .route(
            "/v1/components/{id}",
            get(components::show).delete(components::delete),
        )
        .route("/v1/pipelines", get(pipelines::list))
        .route(
            "/v1/pipelines/{name}",
            get(pipelines::show)
                .put(pipelines::put)
                .delete(pipelines::delete),
        )
        .route("/v1/pipelines/{name}/stop", post(pipelines::stop))
        .route("/v1/pipelines/{name}/start", post(pipelines::start))
        .route("/v1/pipelines/{name}/replay", post(replay::replay))
        .route("/v1/pipelines/{name}/progress", get(reports::progress))
        .route("/v1/pipelines/{name}/logs", get(reports::logs))
        .route(
            "/v1/pipelines/{name}/dead-letters",
            get(reports::dead_letters),
        )
        .route("/v1/cluster", get(cluster::overview))
        .route("/metrics", get(reports::metrics))
        .fallback(|| async { ApiError::not_found("such endpoint (the API is under /v1)") })
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BODY))
        .layer(axum::middleware::map_response_with_state(
            state.data.clone(),
            error::json_errors,
        ))
        .with_state(state)
}

/// Serve until SIGINT or SIGTERM; pipelines that should run are resumed
/// first. On a signal, open requests get the edge's shutdown grace, then
/// pipelines are stopped (bounded, see `supervisor::STOP_GRACE`).
pub fn run(
    state: AppState,
    listen: SocketAddr,
    limits: edge::EdgeLimits,
) -> Result<(), ServeError> {
    fence::report();
    let cluster = state.cluster.clone();
    match &cluster {
        None => pipelines::resume_all(&state),
        Some(c) => {
            c.join().map_err(ServeError::Cluster)?;
            let (st, c) = (state.clone(), c.clone());
            std::thread::Builder::new()
                .name("weir-cluster-placement".into())
                .spawn(move || cluster::placement::run(st, c))
                .map_err(|err| ServeError::Io {
                    path: state.data.clone(),
                    err,
                })?;
        }
    }
    let (watched, interval) = (state.clone(), state.quota_interval);
    std::thread::Builder::new()
        .name("weir-quota".into())
        .spawn(move || quota::watch(watched, interval))
        .map_err(|err| ServeError::Io {
            path: state.data.clone(),
            err,
        })?;
    let supervisor = state.supervisor.clone();
    let r = serve(state, listen, limits);
    if let Some(c) = &cluster {
        c.shutting_down();
    }
    supervisor.stop_all();
    if let Some(c) = cluster {
        c.leave();
    }
    r
}

fn serve(state: AppState, listen: SocketAddr, limits: edge::EdgeLimits) -> Result<(), ServeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| ServeError::Io {
            path: state.data.clone(),
            err,
        })?;
    let r = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|err| ServeError::Listen { addr: listen, err })?;
        let addr = listener.local_addr().unwrap_or(listen);
        if let Some(c) = &state.cluster {
            // Listening on every address: other machines know it by name.
            let shown = match weir_connectors::hostname::hostname() {
                Ok(name) if addr.ip().is_unspecified() => format!("{name}:{}", addr.port()),
                _ => addr.to_string(),
            };
            c.listening(format!("http://{shown}"));
        }
        tracing::warn!("weir serve: listening on http://{addr}");
        eprintln!("weir serve: listening on http://{addr}");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|err| ServeError::Listen { addr: listen, err })?;
        let signalled = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        edge::serve(listener, router(state), limits, signalled).await;
        Ok(())
    });
    // Requests still computing (a component being compiled) are not waited
    // for past this.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    r
}
