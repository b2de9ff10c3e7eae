//! `weir replay PIPELINE.toml --component CANDIDATE.wasm`: the candidate
//! over committed batches of the pipeline, compared with its live output.
//! Exits 0 when nothing differs, 1 when something does (a canary check in a
//! deploy script), 2 when the replay could not run.

use std::path::PathBuf;
use std::process::ExitCode;

use weir_pipeline::replay::{self, ReplayOptions, Report};
use weir_pipeline::spec::Pipeline;
use weir_runtime::Runtime;

#[derive(clap::Args)]
pub struct Args {
    /// The live pipeline's file (its checkpoint and sinks are only read).
    pipeline: PathBuf,
    /// The candidate component to replay in place of the pipeline's.
    #[arg(long, value_name = "FILE.wasm")]
    component: PathBuf,
    /// First batch (epoch) id to replay [default: the 5th newest committed].
    #[arg(long)]
    from: Option<u64>,
    /// Last batch (epoch) id to replay, inclusive [default: the newest committed].
    #[arg(long)]
    to: Option<u64>,
    /// Differences to list per output and batch.
    #[arg(long, default_value_t = replay::DEFAULT_SHOWN)]
    shown: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<ExitCode> {
    let spec = match Pipeline::load(&args.pipeline) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let opts = ReplayOptions {
        candidate: args.component,
        from: args.from,
        to: args.to,
        shown: args.shown,
        scratch_in: std::env::temp_dir(),
    };
    let report = match replay::replay(runtime, &spec, None, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print(&report);
    }
    Ok(match report.total_differences {
        Some(n) if n > 0 => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

fn print(r: &Report) {
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>12} {:>12} {:>11}",
        r.unit, "input", "output", "rejected", "rows/s", "live output", "differences"
    );
    let or_dash = |n: Option<u64>| n.map_or("-".to_string(), |n| n.to_string());
    for b in &r.batches {
        println!(
            "{:>8} {:>10} {:>10} {:>10} {:>12.0} {:>12} {:>11}",
            b.id,
            b.input_rows,
            b.output_rows,
            b.rejected_rows.values().sum::<u64>(),
            b.rows_per_second,
            or_dash(b.live_output_rows),
            or_dash(b.differences),
        );
        for o in &b.outputs {
            let name = o.output.as_deref().unwrap_or("default");
            for d in &o.first_differences {
                println!("  {} {} output `{name}`:", r.unit, b.id);
                println!("    live:      {}", d.live.as_deref().unwrap_or("(none)"));
                println!(
                    "    candidate: {}",
                    d.candidate.as_deref().unwrap_or("(none)")
                );
            }
            if o.differing as usize > o.first_differences.len() {
                println!(
                    "  ... {} more differing in output `{name}`",
                    o.differing as usize - o.first_differences.len()
                );
            }
        }
        if let Some(note) = &b.note {
            println!("  note: {note}");
        }
    }
    match r.total_differences {
        Some(n) => println!(
            "{n} differing record(s) in {} {}",
            r.batches.len(),
            if r.unit == "batch" {
                "batch(es)"
            } else {
                "epoch(s)"
            }
        ),
        None => println!("nothing to compare: no output of this pipeline can be read back"),
    }
}
