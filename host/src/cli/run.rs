//! `weir run PIPELINE.toml`: build the pipeline's query (the library's
//! [`weir_pipeline::build_query`]) and run it with a progress display.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use weir_engine::Progress;
use weir_pipeline::build_query;
use weir_pipeline::spec::{Mode, Pipeline};
use weir_runtime::Runtime;

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ProgressMode {
    /// A live status line on stderr.
    Status,
    /// Every batch's progress as one JSON line on stdout.
    Json,
    None,
}

#[derive(clap::Args)]
pub struct Args {
    /// The pipeline file.
    pipeline: PathBuf,
    /// How to report progress.
    #[arg(long, value_enum, default_value = "status")]
    progress: ProgressMode,
    /// Continuous mode: stop once caught up with the source, no new record
    /// arrived for this long and everything read is committed (e.g. "2s").
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    exit_when_idle: Option<Duration>,
    /// Keep the checkpoint's state and position although the component, the
    /// event-time settings or the output mode changed (state key and state
    /// partitions can never change).
    #[arg(long)]
    upgrade: bool,
    /// Serve this pipeline's Prometheus metrics at http://ADDR/metrics (the
    /// `weir_*` series `weir serve` documents, with an empty tenant).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    weir_pipeline::spec::parse_duration(s)
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<std::process::ExitCode> {
    let spec = Pipeline::load(&args.pipeline)?;
    if args.exit_when_idle.is_some() && spec.mode == Mode::MicroBatch {
        anyhow::bail!(
            "--exit-when-idle applies to continuous mode; a micro-batch pipeline stops by itself with [trigger] type = \"available-now\" or \"once\""
        );
    }
    let mut query = build_query(
        runtime,
        &spec,
        Default::default(),
        args.exit_when_idle,
        args.upgrade,
    )
    .with_context(|| format!("starting pipeline {}", args.pipeline.display()))?;
    let stop = query.stop_handle();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let metrics = args
        .metrics
        .map(|addr| serve_metrics(addr, &spec.name))
        .transpose()?;
    let tty = std::io::stderr().is_terminal();
    let mut last_print = Instant::now() - Duration::from_secs(10);
    let mut show = |p: &Progress| match args.progress {
        ProgressMode::Json => {
            let mut out = std::io::stdout().lock();
            let _ = serde_json::to_writer(&mut out, p);
            let _ = writeln!(out);
            let _ = out.flush();
        }
        ProgressMode::Status if tty => eprint!("\r\x1b[2K{}", p.status_line()),
        ProgressMode::Status => {
            if last_print.elapsed() >= Duration::from_secs(1) {
                eprintln!("{}", p.status_line());
                last_print = Instant::now();
            }
        }
        ProgressMode::None => {}
    };
    let mut report = |p: &Progress| {
        if let Some((m, labels)) = &metrics {
            m.record(labels, p);
        }
        show(p)
    };
    let summary = query.run(&mut report);
    if tty && matches!(args.progress, ProgressMode::Status) {
        eprintln!();
    }
    let summary = summary?;
    if !matches!(args.progress, ProgressMode::Json) {
        let unit = match spec.mode {
            Mode::MicroBatch => "batch(es)",
            Mode::Continuous { .. } => "epoch(s)",
        };
        eprintln!(
            "{}: {} {unit}, {} input rows, {} output rows",
            spec.name, summary.batches, summary.input_rows, summary.output_rows
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Serve `GET /metrics` on `addr` from a thread of its own; the registry
/// is fed from the query's progress reports.
fn serve_metrics(
    addr: std::net::SocketAddr,
    pipeline: &str,
) -> anyhow::Result<(
    std::sync::Arc<weir_metrics::Metrics>,
    weir_metrics::PipelineLabels,
)> {
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--metrics {addr}: cannot listen there"))?;
    listener.set_nonblocking(true)?;
    eprintln!(
        "weir: serving metrics on http://{}/metrics",
        listener.local_addr()?
    );
    let metrics = std::sync::Arc::new(weir_metrics::Metrics::new());
    let served = metrics.clone();
    std::thread::Builder::new()
        .name("weir-metrics".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the metrics endpoint");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let app = axum::Router::new().route(
                    "/metrics",
                    axum::routing::get(move || {
                        let text = served.encode(None);
                        async move {
                            (
                                [(
                                    axum::http::header::CONTENT_TYPE,
                                    "text/plain; version=0.0.4; charset=utf-8",
                                )],
                                text,
                            )
                        }
                    }),
                );
                let _ = axum::serve(listener, app).await;
            });
        })?;
    let labels = weir_metrics::PipelineLabels {
        tenant: String::new(),
        pipeline: pipeline.to_string(),
    };
    Ok((metrics, labels))
}
