//! `weir transform FILE.wasm < in > out`: try a transform on text lines.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use weir_engine::{RecordBatch, Transform, TransformOutput};
use weir_runtime::{CallMode, Limits, Runtime, WasmTransform};

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
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<ExitCode> {
    let component = runtime.load(&args.file, &args.grants)?;
    let mode = if args.per_record {
        CallMode::PerRecord
    } else {
        CallMode::Batch
    };
    let mut transform = WasmTransform::new(
        &component,
        args.config.clone(),
        Limits::default(),
        "transform",
        mode,
    )
    .with_context(|| format!("{}: init failed", args.file.display()))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut batch = RecordBatch::with_capacity(0, BATCH, BATCH * 64);
    let mut rejected = 0usize;
    for (line_no, line) in stdin.split(b'\n').enumerate() {
        let mut line = line.context("reading stdin")?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        batch.push(None, &line, now, line_no as i64);
        if batch.len() == BATCH {
            rejected += run_batch(&mut transform, &batch, &mut out, args.json)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        rejected += run_batch(&mut transform, &batch, &mut out, args.json)?;
    }
    out.flush()?;
    if rejected > 0 {
        eprintln!("{rejected} record(s) rejected by the transform");
    }
    Ok(ExitCode::SUCCESS)
}

fn run_batch(
    t: &mut WasmTransform,
    batch: &RecordBatch,
    out: &mut impl Write,
    json: bool,
) -> anyhow::Result<usize> {
    let result: TransformOutput = t.process_batch(batch).with_context(|| {
        format!(
            "transform failed on the batch of lines {}..={}",
            batch.offsets()[0] + 1,
            batch.offsets()[batch.len() - 1] + 1
        )
    })?;
    for r in &result.rejected {
        eprintln!(
            "line {}: bad record: {}",
            batch.offsets()[r.index as usize] + 1,
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
    Ok(result.rejected.len())
}
