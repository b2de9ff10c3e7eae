//! `weir transform FILE.wasm < in > out`: try a transform on text lines.
//! The guest runs behind the engine's guard, as in `weir run`: a record
//! that makes it trap, overrun its deadline or break a limit is refused
//! alone, named by its input line, and the other records go through.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use weir_engine::{Guarded, RecordBatch, Rejections, Transform, TransformOutput};
use weir_runtime::{CallMode, Runtime, WasmTransform};

/// Lines per batch; large inputs stream through in batches of this size.
const BATCH: usize = 1024;

#[derive(clap::Args)]
pub struct Args {
    /// The transform component.
    file: PathBuf,
    /// A transform config pair (repeatable).
    #[arg(short, long = "config", value_name = "KEY=VALUE", value_parser = super::parse_pair)]
    config: Vec<(String, String)>,
    /// Print whole output records as JSON lines (output, key, value, headers, timestamp, offset).
    #[arg(long)]
    json: bool,
    /// Call the guest once per record instead of once per batch.
    #[arg(long)]
    per_record: bool,
    /// Allow an extra imported interface, e.g. wasi:sockets (repeatable), as
    /// a pipeline's `grants` does; the sandbox stays closed.
    #[arg(long = "grant", value_name = "INTERFACE")]
    grants: Vec<String>,
    /// A `[transform.limits]` setting (repeatable), e.g. `memory=64MiB`,
    /// `call-timeout=50ms`, `fuel=1000000`.
    #[arg(long = "limit", value_name = "KEY=VALUE", value_parser = super::parse_pair)]
    limits: Vec<(String, String)>,
}

/// What went through, for the closing summary.
#[derive(Default)]
struct Tally {
    input: u64,
    output: u64,
    rejected: Rejections,
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<ExitCode> {
    let component = runtime.load(&args.file, &args.grants)?;
    let mode = if args.per_record {
        CallMode::PerRecord
    } else {
        CallMode::Batch
    };
    let limits =
        weir_pipeline::spec::limits_from_pairs(&args.limits).map_err(|e| anyhow::anyhow!("{e}"))?;
    let guest = WasmTransform::new(
        &component,
        args.config.clone(),
        limits.limits,
        "transform",
        mode,
    )
    .with_context(|| format!("{}: init failed", args.file.display()))?;
    let mut transform = Guarded::new(Box::new(guest), limits.record_limits);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let started = Instant::now();
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut batch = RecordBatch::with_capacity(0, BATCH, BATCH * 64);
    let mut tally = Tally::default();
    for (line_no, line) in stdin.split(b'\n').enumerate() {
        let mut line = line.context("reading stdin")?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        batch.push(None, &line, now, line_no as i64);
        if batch.len() == BATCH {
            run_batch(&mut transform, &batch, &mut out, args.json, &mut tally)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        run_batch(&mut transform, &batch, &mut out, args.json, &mut tally)?;
    }
    out.flush()?;
    let secs = started.elapsed().as_secs_f64();
    let rejected = tally.rejected.by_kind();
    let why: Vec<String> = rejected.iter().map(|(k, n)| format!("{k} {n}")).collect();
    eprintln!(
        "{} in, {} out, {} rejected{} in {secs:.2} s ({:.0} records/s)",
        tally.input,
        tally.output,
        tally.rejected.total(),
        if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join(", "))
        },
        tally.input as f64 / secs.max(1e-9),
    );
    Ok(ExitCode::SUCCESS)
}

fn run_batch(
    t: &mut Guarded,
    batch: &RecordBatch,
    out: &mut impl Write,
    json: bool,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let result: TransformOutput = t.process_batch(batch).with_context(|| {
        format!(
            "transform failed on the batch of lines {}..={}",
            batch.offsets()[0] + 1,
            batch.offsets()[batch.len() - 1] + 1
        )
    })?;
    tally.input += batch.len() as u64;
    tally.output += result.batch.len() as u64;
    for r in &result.rejected {
        tally.rejected.count(r.kind);
        eprintln!(
            "line {}: {}: {}",
            batch.offsets()[r.index as usize] + 1,
            r.kind.as_str(),
            r.reason
        );
    }
    for o in result.batch.iter(batch) {
        if json {
            let headers: serde_json::Map<String, serde_json::Value> = o
                .headers()
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v).into()))
                .collect();
            let rec = serde_json::json!({
                "output": o.output,
                "key": o.key.map(String::from_utf8_lossy),
                "value": String::from_utf8_lossy(o.value),
                "headers": headers,
                "timestamp": o.timestamp,
                "offset": batch.offsets()[o.origin as usize],
            });
            writeln!(out, "{rec}")?;
        } else {
            out.write_all(o.value)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
