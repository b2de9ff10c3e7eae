//! `weir run PIPELINE.toml`: wire the spec's sources, transform and sinks
//! into a micro-batch or continuous query and run it.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use weir::connectors::{
    console::ConsoleSink, file_sink::FileSink, file_source::FileSource, log_sink::LogSink,
    log_source::LogSource, rate::RateSource,
};
use weir::engine::connector::ContinuousSource;
use weir::engine::state::{OutputMode, StatefulOptions};
use weir::engine::{
    ContinuousOptions, ContinuousQuery, EngineError, ErrorPolicy, FnTransform, Guarded,
    LocalCheckpointStore, MicroBatchQuery, OutputBatch, Progress, QueryOptions, RecordBatch,
    RunSummary, Sink, Source, Transform, TransformError, TransformFactory, Trigger,
};
use weir::runtime::tenant::Tenant;
use weir::runtime::{Runtime, WasmTransform};
use weir::spec::{Mode, OnError, Pipeline, SinkSpec, SourceSpec};

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

fn build_source(s: &SourceSpec, trigger: Trigger) -> anyhow::Result<Box<dyn Source>> {
    #[cfg(not(feature = "kafka"))]
    let _ = trigger;
    Ok(match s {
        SourceSpec::Log {
            root,
            topic,
            starting,
            max_records_per_trigger,
        } => Box::new(LogSource::open(
            root.clone(),
            topic,
            *max_records_per_trigger,
            *starting,
        )?),
        SourceSpec::Files {
            dir,
            format,
            max_files_per_trigger,
        } => Box::new(FileSource::new(
            dir.clone(),
            *format,
            *max_files_per_trigger,
        )),
        SourceSpec::Rate {
            rows_per_second,
            partitions,
            max_records_per_trigger,
        } => Box::new(RateSource::new(
            *rows_per_second,
            *partitions,
            *max_records_per_trigger,
        )),
        #[cfg(feature = "kafka")]
        SourceSpec::Kafka(k) => {
            let interval = match trigger {
                Trigger::ProcessingTime(i) => Some(i),
                _ => None,
            };
            Box::new(weir::connectors::kafka::KafkaSource::new(
                k.clone(),
                interval,
            )?)
        }
        #[cfg(not(feature = "kafka"))]
        SourceSpec::Kafka(_) => anyhow::bail!(NO_KAFKA),
    })
}

#[cfg(not(feature = "kafka"))]
const NO_KAFKA: &str = "this weir was built without Kafka support (cargo feature `kafka`)";

fn build_sink(route: &Option<String>, s: &SinkSpec) -> anyhow::Result<Box<dyn Sink>> {
    let route = route.as_deref().unwrap_or("default");
    Ok(match s {
        SinkSpec::Log {
            root,
            topic,
            partitions,
        } => Box::new(LogSink::open(
            root.clone(),
            topic,
            route,
            Some(*partitions),
        )?),
        SinkSpec::Files { dir, format } => Box::new(FileSink::new(dir.clone(), *format)),
        SinkSpec::Console => Box::new(ConsoleSink),
        #[cfg(feature = "kafka")]
        SinkSpec::Kafka(k) => Box::new(weir::connectors::kafka::KafkaSink::new(k.clone(), route)),
        #[cfg(not(feature = "kafka"))]
        SinkSpec::Kafka(_) => anyhow::bail!(NO_KAFKA),
    })
}

/// Records pass through unchanged when a pipeline has no transform.
fn identity(input: &RecordBatch, out: &mut OutputBatch) -> Result<(), TransformError> {
    out.values.extend_from_slice(&input.values);
    out.value_ends.extend_from_slice(&input.value_ends);
    out.keys.extend_from_slice(&input.keys);
    out.key_ends.extend_from_slice(&input.key_ends);
    out.has_key.extend_from_slice(&input.has_key);
    out.headers.extend_from_slice(&input.headers);
    out.header_ends.extend_from_slice(&input.header_ends);
    Ok(())
}

/// The transform instances' factory (each guest behind the engine's guard),
/// the pipeline's error policy, and whether the guest keeps state.
fn factory(
    runtime: &Runtime,
    spec: &Pipeline,
    tenant: Option<Arc<Tenant>>,
) -> anyhow::Result<Guest> {
    let Some(t) = spec.transform.clone() else {
        let identity = |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
            Ok(Box::new(FnTransform(identity)))
        };
        return Ok(Guest {
            factory: Box::new(identity),
            policy: ErrorPolicy::Skip,
            stateful: false,
            component: None,
        });
    };
    let mut component = if t.limits.fuel.is_some() {
        runtime.load_metered(&t.component, &t.grants)?
    } else {
        runtime.load(&t.component, &t.grants)?
    }
    .with_sandbox(t.sandbox.clone());
    weir::runtime::check_sandbox(&t.sandbox, runtime.cache_dir()).map_err(anyhow::Error::msg)?;
    // Guest logs carry the tenant first, so they can be routed per tenant.
    let mut name = spec.name.clone();
    if let Some(tenant) = tenant {
        name = format!("{}/{name}", tenant.name());
        component = component.for_tenant(tenant);
    }
    component.check_limits(&t.limits)?;
    let policy = match t.on_error {
        OnError::Fail => ErrorPolicy::Fail,
        OnError::Skip => ErrorPolicy::Skip,
        OnError::DeadLetter => ErrorPolicy::DeadLetter {
            component: format!("sha256:{}", component.info().sha256).into(),
        },
    };
    let stateful = component.info().stateful;
    let id = format!("sha256:{}", component.info().sha256);
    match (&spec.state_key, stateful) {
        (None, true) => anyhow::bail!(
            "{} keeps keyed state, so the pipeline must say how records are keyed: [state] key = \"record-key\" or key-field = \"<json.path>\" (state is partitioned by that key)",
            t.component.display()
        ),
        (Some(_), false) => anyhow::bail!(
            "[state] key / key-field partition keyed state, and {} imports no keyed state (weir:transform/state); remove them",
            t.component.display()
        ),
        _ => {}
    }
    if !stateful && spec.state.output_mode != OutputMode::Append {
        anyhow::bail!(
            "output-mode = \"{}\" needs a stateful transform, and {} imports no keyed state (weir:transform/state); stateless transforms emit in append mode",
            spec.state.output_mode.as_str(),
            t.component.display()
        );
    }
    let factory = move |source: usize, task: u32| -> Result<Box<dyn Transform>, TransformError> {
        let label = if stateful {
            format!("{name}/state-partition-{task}")
        } else {
            format!("{name}/source-{source}/task-{task}")
        };
        let guest = WasmTransform::new(&component, t.config.clone(), t.limits, &label, t.call)?;
        Ok(Box::new(Guarded::new(Box::new(guest), t.record_limits)))
    };
    Ok(Guest {
        factory: Box::new(factory),
        policy,
        stateful,
        component: Some(id),
    })
}

/// A pipeline's transform as the engine takes it.
struct Guest {
    factory: Box<dyn TransformFactory>,
    policy: ErrorPolicy,
    /// The component keeps keyed state.
    stateful: bool,
    /// `sha256:<hex>` of the component, recorded in the checkpoint.
    component: Option<String>,
}

/// Either execution mode, behind one interface for the CLI.
pub(crate) enum Query {
    MicroBatch(Box<MicroBatchQuery>),
    Continuous(Box<ContinuousQuery>),
}

impl Query {
    pub(crate) fn stop_handle(&self) -> Arc<std::sync::atomic::AtomicBool> {
        match self {
            Query::MicroBatch(q) => q.stop_handle(),
            Query::Continuous(q) => q.stop_handle(),
        }
    }

    pub(crate) fn run(
        &mut self,
        report: &mut dyn FnMut(&Progress),
    ) -> Result<RunSummary, EngineError> {
        match self {
            Query::MicroBatch(q) => q.run(report),
            Query::Continuous(q) => q.run(report),
        }
    }
}

/// Wire a pipeline's sources, transform (for `tenant`, when given) and
/// sinks into a query over its checkpoint.
pub(crate) fn build_query(
    runtime: &Runtime,
    spec: &Pipeline,
    tenant: Option<Arc<Tenant>>,
    exit_when_idle: Option<Duration>,
    upgrade: bool,
) -> anyhow::Result<Query> {
    let sinks = spec
        .sinks
        .iter()
        .map(|(route, s)| Ok((route.clone(), build_sink(route, s)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Guest {
        factory,
        policy: error_policy,
        stateful,
        component,
    } = factory(runtime, spec, tenant)?;
    let state = StatefulOptions {
        stateful,
        ..spec.state.clone()
    };
    let store = Arc::new(LocalCheckpointStore::open(&spec.checkpoint)?);
    let query = match spec.mode {
        Mode::MicroBatch => {
            let sources = spec
                .sources
                .iter()
                .map(|s| build_source(s, spec.trigger))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let options = QueryOptions {
                trigger: spec.trigger,
                error_policy: error_policy.clone(),
                backpressure: spec.backpressure,
                state,
                upgrade,
                component,
                ..QueryOptions::default()
            };
            MicroBatchQuery::new(store, sources, factory, sinks, options)
                .map(|q| Query::MicroBatch(Box::new(q)))
        }
        Mode::Continuous {
            checkpoint_interval,
        } => {
            let source: Box<dyn ContinuousSource> = match &spec.sources[0] {
                SourceSpec::Log {
                    root,
                    topic,
                    starting,
                    ..
                } => Box::new(LogSource::open(root.clone(), topic, None, *starting)?),
                #[cfg(feature = "kafka")]
                SourceSpec::Kafka(k) => {
                    Box::new(weir::connectors::kafka::KafkaSource::continuous(k.clone())?)
                }
                _ => anyhow::bail!("continuous mode reads one source of type \"log\" or \"kafka\""),
            };
            let options = ContinuousOptions {
                checkpoint_interval,
                error_policy,
                exit_when_idle,
                state,
                upgrade,
                component,
                ..ContinuousOptions::default()
            };
            ContinuousQuery::new(store, source, factory, sinks, options)
                .map(|q| Query::Continuous(Box::new(q)))
        }
    }
    .map_err(anyhow::Error::from)?;
    Ok(query)
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
