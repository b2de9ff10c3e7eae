//! `weir run PIPELINE.toml`: build the pipeline's query (the library's
//! [`weir::pipeline::build_query`]) and run it with a progress display.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use weir::engine::Progress;
use weir::pipeline::build_query;
use weir::runtime::Runtime;
use weir::spec::{Mode, Pipeline};

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
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    weir::spec::parse_duration(s)
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<std::process::ExitCode> {
    let spec = Pipeline::load(&args.pipeline)?;
    if args.exit_when_idle.is_some() && spec.mode == Mode::MicroBatch {
        anyhow::bail!(
            "--exit-when-idle applies to continuous mode; a micro-batch pipeline stops by itself with [trigger] type = \"available-now\" or \"once\""
        );
    }
    let mut query = build_query(runtime, &spec, None, args.exit_when_idle, args.upgrade)
        .with_context(|| format!("starting pipeline {}", args.pipeline.display()))?;
    let stop = query.stop_handle();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let tty = std::io::stderr().is_terminal();
    let mut last_print = Instant::now() - Duration::from_secs(10);
    let mut report = |p: &Progress| match args.progress {
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
