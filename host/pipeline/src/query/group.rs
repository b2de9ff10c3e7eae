//! A pipeline with `[group]`: one member of a Kafka consumer group (see
//! [`weir_engine::group`]).

use std::sync::Arc;
#[cfg(feature = "kafka")]
use std::time::Duration;

use super::{BuildError, Query};
#[cfg(feature = "kafka")]
use crate::spec::Mode;
use crate::spec::Pipeline;
use weir_connectors::kafka::ConsumerGroup;
#[cfg(feature = "kafka")]
use weir_engine::Trigger;
#[cfg(feature = "kafka")]
use weir_engine::group::{GroupOptions, GroupQuery};
use weir_engine::state::StatefulOptions;
use weir_engine::{CheckpointStore, ErrorPolicy, TransformFactory};

/// Batches of a default trigger end this often: as fast as data arrives,
/// without a transaction per handful of records.
#[cfg(feature = "kafka")]
const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);

/// Records per batch when the source sets no max-offsets-per-trigger.
#[cfg(feature = "kafka")]
const DEFAULT_MAX_RECORDS: usize = 100_000;

pub(super) fn build(
    spec: &Pipeline,
    group: &ConsumerGroup,
    store: Arc<dyn CheckpointStore>,
    factory: Box<dyn TransformFactory>,
    error_policy: ErrorPolicy,
    state: StatefulOptions,
) -> Result<Query, BuildError> {
    #[cfg(feature = "kafka")]
    {
        use crate::spec::{SinkSpec, SourceSpec};
        let SourceSpec::Kafka(source) = &spec.sources[0] else {
            return Err(BuildError::Refused("[group] needs a kafka source".into()));
        };
        let sinks = spec
            .sinks
            .iter()
            .map(|(r, s)| match s {
                SinkSpec::Kafka(k) => Ok((r.clone(), k.clone())),
                _ => Err(BuildError::Refused("[group] needs Kafka sinks".into())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let member = weir_connectors::kafka::KafkaGroupMember::new(source.clone(), group, sinks)?;
        let (commit_interval, continuous) = match spec.mode {
            Mode::Continuous {
                checkpoint_interval,
            } => (checkpoint_interval, true),
            Mode::MicroBatch => match spec.trigger {
                Trigger::ProcessingTime(d) => (d, false),
                _ => (DEFAULT_INTERVAL, false),
            },
        };
        let max_records = source
            .max_offsets_per_trigger
            .map_or(DEFAULT_MAX_RECORDS, |m| m.min(usize::MAX as u64) as usize);
        let options = GroupOptions {
            commit_interval,
            continuous,
            max_records,
            error_policy,
            state,
            parallelism: weir_engine::parallel::default_parallelism(),
        };
        Ok(Query::Group(Box::new(GroupQuery::new(
            store,
            Box::new(member),
            factory,
            options,
        )?)))
    }
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (spec, group, store, factory, error_policy, state);
        Err(BuildError::Refused(super::NO_KAFKA.into()))
    }
}
