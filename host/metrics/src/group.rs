//! Group mode: which input partitions each member holds, from the member
//! and partitions its progress names (`sources[0].metrics`).

use std::collections::BTreeSet;

use prometheus_client::encoding::EncodeLabelSet;

use super::{Metrics, PipelineLabels};
use weir_engine::Progress;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PartitionLabels {
    tenant: String,
    pipeline: String,
    member: String,
    partition: String,
}

impl Metrics {
    /// `weir_group_partition_held`: 1 for each partition the member holds
    /// now, 0 for one it held before (so a moved partition shows moved).
    pub(super) fn record_group(
        &self,
        l: &PipelineLabels,
        p: &Progress,
        held: &mut BTreeSet<String>,
    ) {
        let Some(m) = p.sources.first().map(|s| &s.metrics) else {
            return;
        };
        let (Some(member), Some(parts)) = (m.get("member"), m.get("partitions")) else {
            return;
        };
        let now: BTreeSet<String> = parts
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        for part in held.union(&now) {
            let labels = PartitionLabels {
                tenant: l.tenant.clone(),
                pipeline: l.pipeline.clone(),
                member: member.clone(),
                partition: part.clone(),
            };
            self.group_partitions
                .get_or_create(&labels)
                .set(now.contains(part) as i64);
        }
        *held = now;
    }
}
