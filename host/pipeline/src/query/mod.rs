//! Building a runnable query from a validated pipeline spec: its sources,
//! its transform (each guest behind the engine's guard, for a tenant when
//! given) and its sinks, over its checkpoint. `weir run`, `weir host` and
//! `weir serve` all start pipelines through [`build_query`], so a pipeline
//! means the same thing whichever way it is started.

mod group;

use std::sync::Arc;
use std::time::Duration;

use crate::spec::{Mode, Pipeline, SinkSpec, SourceSpec};
use weir_connectors::{
    console::ConsoleSink, file_sink::FileSink, file_source::FileSource, log_sink::LogSink,
    log_source::LogSource, rate::RateSource,
};
use weir_engine::ContinuousSource;
use weir_engine::state::{OutputMode, StatefulOptions};
use weir_engine::{
    CheckpointError, ConnectorError, ContinuousOptions, ContinuousQuery, EngineError, ErrorPolicy,
    FnTransform, Guarded, MicroBatchQuery, OutputBatch, Progress, QueryOptions, RecordBatch,
    RunSummary, Sink, Source, Transform, TransformError, TransformFactory, Trigger,
};
use weir_runtime::tenant::Tenant;
use weir_runtime::{CallMode, LoadError, RECORD_INTERFACE, Runtime, WasmTransform};

/// Why a pipeline could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Connector(#[from] ConnectorError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The pipeline asks for something its component or build cannot do.
    #[error("{0}")]
    Refused(String),
}

fn refused(message: String) -> BuildError {
    BuildError::Refused(message)
}

fn build_source(s: &SourceSpec, trigger: Trigger) -> Result<Box<dyn Source>, BuildError> {
    #[cfg(not(feature = "kafka"))]
    let _ = trigger;
    Ok(match s {
        SourceSpec::Log {
            root,
            topic,
            starting,
            max_records_per_trigger,
            max_bytes_per_trigger,
        } => Box::new(
            LogSource::open(root.clone(), topic, *max_records_per_trigger, *starting)?
                .with_max_bytes_per_trigger(*max_bytes_per_trigger),
        ),
        SourceSpec::Files {
            dir,
            format,
            max_files_per_trigger,
            max_bytes_per_trigger,
        } => Box::new(
            FileSource::new(dir.clone(), *format, *max_files_per_trigger)
                .with_max_bytes_per_trigger(*max_bytes_per_trigger),
        ),
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
            Box::new(weir_connectors::kafka::KafkaSource::new(
                k.clone(),
                interval,
            )?)
        }
        #[cfg(not(feature = "kafka"))]
        SourceSpec::Kafka(_) => return Err(BuildError::Refused(NO_KAFKA.into())),
    })
}

#[cfg(not(feature = "kafka"))]
const NO_KAFKA: &str = "this weir was built without Kafka support (cargo feature `kafka`)";

pub(crate) fn build_sink(
    route: &Option<String>,
    s: &SinkSpec,
) -> Result<Box<dyn Sink>, BuildError> {
    let route = route.as_deref().unwrap_or("default");
    Ok(match s {
        SinkSpec::Log {
            root,
            topic,
            partitions,
            as_produced,
            segment_bytes,
        } => Box::new(
            LogSink::open_creating(
                root.clone(),
                topic,
                route,
                Some(*partitions),
                *segment_bytes,
            )?
            .as_produced(*as_produced),
        ),
        SinkSpec::Files { dir, format } => Box::new(FileSink::new(dir.clone(), *format)),
        SinkSpec::Console => Box::new(ConsoleSink),
        #[cfg(feature = "kafka")]
        SinkSpec::Kafka(k) => Box::new(weir_connectors::kafka::KafkaSink::new(k.clone(), route)),
        #[cfg(not(feature = "kafka"))]
        SinkSpec::Kafka(_) => return Err(BuildError::Refused(NO_KAFKA.into())),
    })
}

/// Records pass through unchanged when a pipeline has no transform.
fn identity(input: &RecordBatch, out: &mut OutputBatch) -> Result<(), TransformError> {
    out.pass_through(input);
    Ok(())
}

/// Whose guests a query runs: the tenant they are charged to (memory quota,
/// CPU share), and the switch that stops them mid-call.
#[derive(Clone, Default)]
pub struct GuestScope {
    pub tenant: Option<Arc<Tenant>>,
    pub abort: Option<weir_runtime::Abort>,
}

impl GuestScope {
    pub fn of_tenant(tenant: Arc<Tenant>) -> GuestScope {
        GuestScope {
            tenant: Some(tenant),
            abort: None,
        }
    }
}

/// The transform instances' factory (each guest behind the engine's guard),
/// the pipeline's error policy, and whether the guest keeps state.
fn factory(runtime: &Runtime, spec: &Pipeline, scope: GuestScope) -> Result<Guest, BuildError> {
    if let Some(w) = &spec.window {
        // Its state counts against the tenant's memory quota, as a guest's does.
        let budget = scope.tenant.as_ref().map(|t| t.state_budget());
        return Ok(Guest {
            factory: w.spec.clone().factory(budget),
            policy: w.on_error.policy(w.spec.identity()),
            stateful: true,
            component: Some(w.spec.identity()),
        });
    }
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
    weir_runtime::check_sandbox(&t.sandbox, runtime.cache_dir()).map_err(BuildError::Refused)?;
    // Guest logs carry the tenant first, so they can be routed per tenant.
    let mut name = spec.name.clone();
    if let Some(tenant) = scope.tenant {
        name = format!("{}/{name}", tenant.name());
        component = component.for_tenant(tenant);
    }
    if let Some(abort) = scope.abort {
        component = component.with_abort(abort);
    }
    component.check_limits(&t.limits)?;
    let policy = t
        .on_error
        .policy(format!("sha256:{}", component.info().sha256));
    let stateful = component.info().stateful;
    let id = format!("sha256:{}", component.info().sha256);
    match (&spec.state_key, stateful) {
        (None, true) => {
            return Err(refused(format!(
                "{} keeps keyed state, so the pipeline must say how records are keyed: [state] key = \"record-key\" or key-field = \"<json.path>\" (state is partitioned by that key)",
                t.component.display()
            )));
        }
        (Some(_), false) => {
            return Err(refused(format!(
                "[state] key / key-field and the sources' key-field partition keyed state, and {} imports no keyed state (weir:transform/state); remove them",
                t.component.display()
            )));
        }
        _ => {}
    }
    if !stateful && spec.state.output_mode != OutputMode::Append {
        return Err(refused(format!(
            "output-mode = \"{}\" needs a stateful transform, and {} imports no keyed state (weir:transform/state); stateless transforms emit in append mode",
            spec.state.output_mode.as_str(),
            t.component.display()
        )));
    }
    let per_record = component
        .info()
        .interfaces
        .exports
        .iter()
        .any(|e| e == RECORD_INTERFACE);
    if t.call == CallMode::PerRecord && !per_record {
        return Err(refused(format!(
            "call = \"record\" needs {} to export `{RECORD_INTERFACE}` (build it for the record-transformer world), or use call = \"batch\"",
            t.component.display()
        )));
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
pub enum Query {
    MicroBatch(Box<MicroBatchQuery>),
    Continuous(Box<ContinuousQuery>),
    /// One member of a consumer group (`[group]`), in either mode.
    Group(Box<weir_engine::group::GroupQuery>),
}

impl Query {
    pub fn stop_handle(&self) -> Arc<std::sync::atomic::AtomicBool> {
        match self {
            Query::MicroBatch(q) => q.stop_handle(),
            Query::Continuous(q) => q.stop_handle(),
            Query::Group(q) => q.stop_handle(),
        }
    }

    /// Fire every window and event-time timer at the end of a bounded
    /// (`once` / `available-now`) micro-batch run; see
    /// [`weir_engine::QueryOptions::end_of_input_watermark`].
    pub fn flush_event_time_at_end(&mut self) {
        if let Query::MicroBatch(q) = self {
            q.flush_event_time_at_end();
        }
    }

    /// The micro-batch query, which can run a step at a time (see
    /// [`MicroBatchQuery::step`]); continuous and group queries run on
    /// threads of their own.
    pub fn stepwise(&mut self) -> Option<&mut MicroBatchQuery> {
        match self {
            Query::MicroBatch(q) => Some(q),
            _ => None,
        }
    }

    pub fn run(&mut self, report: &mut dyn FnMut(&Progress)) -> Result<RunSummary, EngineError> {
        match self {
            Query::MicroBatch(q) => q.run(report),
            Query::Continuous(q) => q.run(report),
            Query::Group(q) => q.run(report),
        }
    }
}

/// Wire a pipeline's sources, transform (for `tenant`, when given) and
/// sinks into a query over its checkpoint.
pub fn build_query(
    runtime: &Runtime,
    spec: &Pipeline,
    guests: GuestScope,
    exit_when_idle: Option<Duration>,
    upgrade: bool,
) -> Result<Query, BuildError> {
    let sinks = spec
        .sinks
        .iter()
        .map(|(route, s)| Ok((route.clone(), build_sink(route, s)?)))
        .collect::<Result<Vec<_>, BuildError>>()?;
    let Guest {
        factory,
        policy: error_policy,
        stateful,
        component,
    } = factory(runtime, spec, guests)?;
    let state = StatefulOptions {
        stateful,
        ..spec.state.clone()
    };
    let store = spec.checkpoint.open()?;
    if let Some(group) = &spec.group {
        return group::build(spec, group, store, factory, error_policy, state);
    }
    let query = match spec.mode {
        Mode::MicroBatch => {
            let sources = spec
                .sources
                .iter()
                .map(|s| build_source(s, spec.trigger))
                .collect::<Result<Vec<_>, BuildError>>()?;
            let options = QueryOptions {
                trigger: spec.trigger,
                idle: spec.idle,
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
            let sources = spec
                .sources
                .iter()
                .map(continuous_source)
                .collect::<Result<Vec<_>, BuildError>>()?;
            // A source's max-bytes-per-trigger caps each partition's
            // epoch; the smallest cap applies to all.
            let max_epoch_bytes = spec
                .sources
                .iter()
                .filter_map(|s| match s {
                    SourceSpec::Log {
                        max_bytes_per_trigger,
                        ..
                    } => Some(*max_bytes_per_trigger),
                    #[cfg(feature = "kafka")]
                    SourceSpec::Kafka(k) => Some(k.max_bytes_per_trigger),
                    _ => None,
                })
                .min();
            let options = ContinuousOptions {
                checkpoint_interval,
                error_policy,
                exit_when_idle,
                max_epoch_bytes: max_epoch_bytes
                    .unwrap_or(ContinuousOptions::default().max_epoch_bytes),
                state,
                upgrade,
                component,
                ..ContinuousOptions::default()
            };
            ContinuousQuery::reading(store, sources, factory, sinks, options)
                .map(|q| Query::Continuous(Box::new(q)))
        }
    }?;
    Ok(query)
}

/// A continuous-mode reader of source `s` (a log or Kafka topic).
fn continuous_source(s: &SourceSpec) -> Result<Box<dyn ContinuousSource>, BuildError> {
    Ok(match s {
        SourceSpec::Log {
            root,
            topic,
            starting,
            ..
        } => Box::new(LogSource::open(root.clone(), topic, None, *starting)?),
        #[cfg(feature = "kafka")]
        SourceSpec::Kafka(k) => {
            Box::new(weir_connectors::kafka::KafkaSource::continuous(k.clone())?)
        }
        _ => {
            return Err(refused(
                "continuous mode reads sources of type \"log\" or \"kafka\"".into(),
            ));
        }
    })
}
