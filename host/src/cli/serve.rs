//! `weir serve`: run weir as a service (see `weir_serve`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use weir_runtime::Runtime;
#[cfg(feature = "serve")]
use weir_serve::{AppState, DEFAULT_MAX_COMPONENT_SIZE};

#[derive(clap::Args)]
#[cfg_attr(not(feature = "serve"), allow(dead_code))]
pub struct Args {
    /// The service's data directory (its store, components, tenants' data).
    #[arg(long, default_value = "weir-data")]
    data: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7600")]
    listen: SocketAddr,
    /// Issue a new admin token, print it once, and exit.
    #[arg(long)]
    init: bool,
    /// Largest component upload, e.g. "64MiB".
    #[arg(long, value_name = "SIZE", value_parser = weir_pipeline::spec::parse_size)]
    max_component_size: Option<usize>,
    /// How often tenants' data is measured against their quotas, e.g. "10s".
    #[arg(long, value_name = "DURATION", value_parser = weir_pipeline::spec::parse_duration)]
    quota_interval: Option<std::time::Duration>,
    /// A request's headers must arrive within this, e.g. "10s".
    #[arg(long, value_name = "DURATION", value_parser = weir_pipeline::spec::parse_duration)]
    header_timeout: Option<std::time::Duration>,
    /// Close connections idle this long, e.g. "60s".
    #[arg(long, value_name = "DURATION", value_parser = weir_pipeline::spec::parse_duration)]
    idle_timeout: Option<std::time::Duration>,
    /// A request must be read and answered within this, e.g. "5m".
    #[arg(long, value_name = "DURATION", value_parser = weir_pipeline::spec::parse_duration)]
    request_timeout: Option<std::time::Duration>,
    /// Connections held at once (default: a quarter of the open-file limit, at most 4096).
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Connections held at once from one client address (default 256).
    #[arg(long, value_name = "N")]
    max_connections_per_client: Option<usize>,
    /// Run as a node of a cluster: the TOML file names its Kafka control
    /// plane and object store (README "Running a cluster").
    #[arg(long, value_name = "FILE")]
    cluster: Option<PathBuf>,
}

/// A weir built without the service (`./scripts/demo` builds one, to start
/// sooner) says so and how to get it.
#[cfg(not(feature = "serve"))]
pub fn run(_: Runtime, _: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this weir was built without `weir serve` (cargo feature `serve`); build it with `cargo build --release`"
    )
}

#[cfg(feature = "serve")]
pub fn run(runtime: Runtime, args: Args) -> anyhow::Result<ExitCode> {
    use std::sync::Arc;
    let store = Arc::new(weir_serve::open(&args.data)?);
    // Tenant roots are absolute: a relative `--data` must mean the same
    // directory whatever the cwd later is.
    let data = std::fs::canonicalize(&args.data)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.data.display()))?;
    let cluster = match &args.cluster {
        None => None,
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let host = weir_connectors::hostname::hostname()
                .map_err(|e| anyhow::anyhow!("this host's name: {e}"))?;
            let config = weir_serve::ClusterConfig::parse(
                &text,
                &file.display().to_string(),
                &format!("{host}:{}", args.listen.port()),
            )
            .map_err(|e| anyhow::anyhow!(e))?;
            Some(weir_serve::Cluster::open(config, store.clone()).map_err(|e| anyhow::anyhow!(e))?)
        }
    };
    let catalog = Arc::new(match &cluster {
        None => weir_serve::Catalog::local(),
        Some(c) => weir_serve::Catalog::Cluster(c.log.clone()),
    });
    // Of several cluster nodes started at once, one issues the token.
    let issued = weir_serve::issue_admin_token(&catalog, &store, args.init)
        .map_err(|e| anyhow::anyhow!("issuing the admin token: {}", e.detail))?;
    if let Some(token) = issued {
        // The only time the admin token exists outside the caller's hands.
        println!("{token}");
        eprintln!(
            "weir serve: admin token printed above; it is stored only as a hash{}",
            match &cluster {
                None => format!(" in {}", args.data.join("weir.db").display()),
                Some(c) => format!(" in the cluster's config topic {}", c.config.config_topic()),
            }
        );
    }
    if args.init {
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = Arc::new(runtime);
    let state = AppState {
        store,
        catalog,
        cluster,
        supervisor: Arc::new(weir_serve::Supervisor::new(runtime.clone(), &data)),
        runtime,
        quota_locks: Default::default(),
        data_usage: Default::default(),
        rates: Default::default(),
        data,
        max_component_size: args
            .max_component_size
            .unwrap_or(DEFAULT_MAX_COMPONENT_SIZE),
        quota_interval: args
            .quota_interval
            .unwrap_or(weir_serve::DEFAULT_QUOTA_INTERVAL),
    };
    let d = weir_serve::EdgeLimits::default();
    let limits = weir_serve::EdgeLimits {
        header_timeout: args.header_timeout.unwrap_or(d.header_timeout),
        idle_timeout: args.idle_timeout.unwrap_or(d.idle_timeout),
        request_timeout: args.request_timeout.unwrap_or(d.request_timeout),
        max_connections: args.max_connections.unwrap_or(d.max_connections).max(1),
        max_connections_per_client: args
            .max_connections_per_client
            .unwrap_or(d.max_connections_per_client)
            .max(1),
        ..d
    };
    weir_serve::run(state, args.listen, limits)?;
    Ok(ExitCode::SUCCESS)
}
