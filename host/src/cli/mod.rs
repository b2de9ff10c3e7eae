//! Argument parsing and wiring; the only place that uses `anyhow` and
//! installs a tracing subscriber.

mod build;
mod client;
mod doctor;
mod host;
mod log;
mod new;
mod replay;
mod run;
mod serve;
mod status;
mod tenant_log;
mod test;
mod transform;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use weir_runtime::{Runtime, RuntimeOptions};

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "WebAssembly stream transforms, exactly once"
)]
struct Cli {
    /// Directory for compiled components (default: $WEIR_CACHE_DIR or ~/.cache/weir/components).
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile components every time instead of using the cache.
    #[arg(long, global = true)]
    no_cache: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check that a component is a weir transform and show its interface.
    Validate(validate::Args),
    /// Run a transform over stdin lines (one record each) and print the output.
    Transform(transform::Args),
    /// Run a pipeline file.
    Run(run::Args),
    /// Replay a candidate component over committed batches of a pipeline and diff its output.
    Replay(replay::Args),
    /// Run a guest over sample records as a pipeline would, and compare its output.
    Test(test::Args),
    /// Scaffold a guest project (README, sample input, unit test).
    New(new::Args),
    /// Build a guest project into a component.
    Build(build::Args),
    /// Check (and with --install, install) each guest language's build tools.
    Doctor(doctor::Args),
    /// Run several tenants' pipelines in one process (quotas, CPU shares).
    Host(host::Args),
    /// Run weir as a service: an HTTP API for tenants and components.
    Serve(serve::Args),
    /// Upload a pipeline's component and create or replace the pipeline on a `weir serve`.
    Deploy(client::DeployArgs),
    /// List your pipelines on a `weir serve`.
    Ls(client::LsArgs),
    /// Print a served pipeline's guest logs (`-f` to follow).
    Logs(client::LogsArgs),
    /// Stop a served pipeline after its current batch or epoch.
    Stop(client::NameArgs),
    /// Start a stopped served pipeline from its checkpoint.
    Start(client::NameArgs),
    /// Delete a served pipeline (`--purge` also deletes its checkpoint).
    Rm(client::RmArgs),
    /// List your uploaded components on a `weir serve`.
    Components(client::ComponentsArgs),
    /// Create, append to and read topics of the embedded log.
    #[command(subcommand)]
    Log(log::LogCommand),
    /// Show a checkpoint's committed position and last progress.
    Status {
        /// The pipeline's checkpoint directory.
        checkpoint: PathBuf,
    },
    /// Print the committed records of a file sink directory.
    Files {
        /// The file sink's directory.
        dir: PathBuf,
    },
}

/// The languages guests are written in, as `--lang` and `weir doctor` name
/// them.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Lang {
    Rust,
    Python,
    Js,
    Go,
    C,
}

impl Lang {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::Go => "go",
            Lang::C => "c",
        }
    }
}

/// Install the log subscriber. `quiet_engine`: the command reports what
/// matters itself (`weir test` prints rejections), so the engine's warnings
/// would only repeat it; errors and guest lines still show.
pub fn init_logging(quiet_engine: bool) {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::prelude::*;
    use tracing_subscriber::{EnvFilter, fmt};
    let filter = EnvFilter::try_from_env("WEIR_LOG")
        // Guests' own logs and prints are for their authors to see.
        .unwrap_or_else(|_| {
            EnvFilter::new(if quiet_engine {
                "error,weir::guest=info"
            } else {
                "warn,weir::guest=info"
            })
        });
    let registry = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_writer(std::io::stderr)
                // Colour codes only for a person at a terminal, not a pipe or file.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_filter(filter),
        )
        // Tenants' own logs (`weir host`) keep their guests' lines from info up.
        .with(tenant_log::TenantLogLayer.with_filter(LevelFilter::INFO));
    // `weir serve` keeps each pipeline's recent guest lines for its API.
    #[cfg(feature = "serve")]
    let registry = registry.with(weir_serve::GuestLogLayer.with_filter(LevelFilter::INFO));
    registry.init();
}

pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    init_logging(matches!(cli.command, Command::Test(_)));
    if std::env::var_os("WEIR_FAULT").is_some() && !weir_engine::FAULT_INJECTION {
        tracing::warn!(
            "WEIR_FAULT is ignored: this weir was built without the fault-injection feature"
        );
    }
    let mut options = RuntimeOptions::default();
    if let Some(dir) = cli.cache_dir {
        options.cache_dir = Some(dir);
    }
    if cli.no_cache {
        options.cache_dir = None;
    }
    let runtime = || Runtime::new(options.clone());
    match cli.command {
        Command::Validate(args) => validate::run(&runtime()?, args),
        Command::Transform(args) => transform::run(&runtime()?, args),
        Command::Run(args) => run::run(&runtime()?, args),
        Command::Replay(args) => replay::run(&runtime()?, args),
        Command::Test(args) => test::run(&runtime()?, args),
        Command::New(args) => new::run(args),
        Command::Build(args) => build::run(&runtime()?, args),
        Command::Doctor(args) => doctor::run(args),
        Command::Host(args) => host::run(&runtime()?, args),
        Command::Serve(args) => serve::run(runtime()?, args),
        Command::Deploy(a) => client::commands::deploy(a),
        Command::Ls(a) => client::commands::ls(a),
        Command::Logs(a) => client::commands::logs(a),
        Command::Stop(a) => client::commands::stop(a),
        Command::Start(a) => client::commands::start(a),
        Command::Rm(a) => client::commands::rm(a),
        Command::Components(a) => client::commands::components(a),
        Command::Log(cmd) => log::run(cmd).map(|()| ExitCode::SUCCESS),
        Command::Status { checkpoint } => status::status(checkpoint).map(|()| ExitCode::SUCCESS),
        Command::Files { dir } => status::files(dir).map(|()| ExitCode::SUCCESS),
    }
}

/// Parse `key=value`.
pub(crate) fn parse_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got `{s}`")),
    }
}
