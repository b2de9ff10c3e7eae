//! `weir host HOST.toml`: several tenants' pipelines in one process. Each
//! tenant has its own checkpoint root and log, a memory quota over all its
//! guest instances and a weighted share of the CPU; each pipeline runs on
//! its own threads with its own Stores, and one failing pipeline stops only
//! itself.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use weir_engine::Progress;
use weir_pipeline::spec::HostSpec;
use weir_runtime::Runtime;
use weir_runtime::tenant::{Scheduler, Tenant};

use super::tenant_log;
use weir_pipeline::build_query;

#[derive(clap::Args)]
pub struct Args {
    /// The host file.
    host: PathBuf,
    /// Continuous pipelines stop once idle this long (as `weir run`).
    #[arg(long, value_name = "DURATION", value_parser = |s: &str| weir_pipeline::spec::parse_duration(s))]
    exit_when_idle: Option<Duration>,
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<ExitCode> {
    let spec = HostSpec::load(&args.host)?;
    let scheduler = Scheduler::new(spec.cores, runtime.epoch_tick());
    let mut tenants = HashMap::new();
    for t in &spec.tenants {
        std::fs::create_dir_all(&t.dir).with_context(|| format!("creating {}", t.dir.display()))?;
        let log = t.dir.join("weir.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        tenant_log::register(&t.name, file);
        tenants.insert(
            t.name.clone(),
            Tenant::new(&t.name, t.max_memory, t.cpu_weight, &scheduler),
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let mut handles = Vec::new();
    let mut stops = Vec::new();
    for (ti, pipeline) in spec.pipelines {
        let tenant = spec.tenants[ti].name.clone();
        let label = format!("{tenant}/{}", pipeline.name);
        let query = build_query(
            runtime,
            &pipeline,
            weir_pipeline::GuestScope::of_tenant(tenants[&tenant].clone()),
            args.exit_when_idle,
            false,
        )
        .with_context(|| format!("starting pipeline {label}"));
        let mut query = match query {
            Ok(q) => q,
            Err(e) => {
                tenant_log::line(&tenant, &format!("ERROR {label}: {e:#}"));
                handles.push((label, Err(format!("{e:#}")), None));
                continue;
            }
        };
        tenant_log::line(&tenant, &format!("INFO {label}: started"));
        stops.push(query.stop_handle());
        let name = label.clone();
        let thread = std::thread::Builder::new()
            .name(format!("weir-{label}"))
            .spawn(move || {
                let mut last = Instant::now() - Duration::from_secs(10);
                let mut report = |p: &Progress| {
                    if last.elapsed() >= Duration::from_secs(1) {
                        tenant_log::line(&tenant, &format!("INFO {name}: {}", p.status_line()));
                        last = Instant::now();
                    }
                };
                let r = query.run(&mut report);
                let line = match &r {
                    Ok(s) => format!(
                        "INFO {name}: finished: {} batch(es), {} input rows, {} output rows",
                        s.batches, s.input_rows, s.output_rows
                    ),
                    Err(e) => format!("ERROR {name}: failed: {e:#}"),
                };
                tenant_log::line(&tenant, &line);
                r.map_err(|e| format!("{e:#}"))
            })
            .expect("spawning a pipeline thread");
        handles.push((label, Ok(()), Some(thread)));
    }
    // A signal stops every pipeline (after its current batch).
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, done) = (stop.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) {
                    for s in &stops {
                        s.store(true, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut failed = 0;
    for (label, started, thread) in handles {
        let result = match (started, thread) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(t)) => t.join().unwrap_or_else(|_| Err("panicked".into())),
            (Ok(()), None) => unreachable!("a started pipeline has a thread"),
        };
        match result {
            Ok(s) => eprintln!(
                "{label}: {} batch(es), {} input rows, {} output rows",
                s.batches, s.input_rows, s.output_rows
            ),
            Err(e) => {
                failed += 1;
                eprintln!("{label}: failed: {e}");
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
