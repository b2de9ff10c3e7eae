//! Building a runnable query from a validated pipeline spec: its sources,
//! its transform (each guest behind the engine's guard, for a tenant when
//! given) and its sinks, over its checkpoint. `weir run`, `weir host` and
//! `weir serve` all start pipelines through [`build_query`], so a pipeline
//! means the same thing whichever way it is started.

mod formats;
mod group;
mod guest;

pub use guest::GuestScope;
use guest::{Guest, factory};

use std::sync::Arc;
use std::time::Duration;

use crate::spec::{Mode, Pipeline, SinkSpec, SourceSpec};
use weir_connectors::{
    console::ConsoleSink, file_sink::FileSink, file_source::FileSource, log_sink::LogSink,
    log_source::LogSource, rate::RateSource,
};
use weir_engine::ContinuousSource;
use weir_engine::state::StatefulOptions;
use weir_engine::{
    CheckpointError, ConnectorError, ContinuousOptions, ContinuousQuery, EngineError,
    MicroBatchQuery, Progress, QueryOptions, RunSummary, Sink, Source, Trigger,
};
use weir_runtime::{LoadError, Runtime};

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
    let factory =
        match formats::Codecs::build(spec, spec.state.source_names.clone())? {
            None => factory,
            Some(codecs) => {
                Box::new(
                    move |source: usize,
                          task: u32|
                          -> Result<
                        Box<dyn weir_engine::Transform>,
                        weir_engine::TransformError,
                    > {
                        Ok(codecs.wrap(factory.create(source, task)?, source))
                    },
                )
            }
        };
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
