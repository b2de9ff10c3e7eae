//! Kafka source, sink and consumer-group options: typed here, without
//! librdkafka, so a pipeline naming Kafka is validated the same way whether
//! or not this build has the Kafka connectors (`spec` parses into them).

use std::collections::BTreeMap;
use std::time::Duration;

/// Which topics a source reads.
#[derive(Debug, Clone, PartialEq)]
pub enum KafkaTopics {
    List(Vec<String>),
    /// A regular expression matched against whole topic names; topics that
    /// appear later are picked up between batches.
    Pattern(String),
}

/// Where a new query starts reading.
#[derive(Debug, Clone, PartialEq)]
pub enum KafkaStarting {
    Earliest,
    Latest,
    /// Per topic and partition; -2 means earliest and -1 latest (Spark's
    /// convention). Partitions not listed start at the earliest offset.
    Offsets(BTreeMap<String, BTreeMap<i32, i64>>),
    /// The first offset whose timestamp is at or after this (ms since the
    /// Unix epoch); partitions with no such record start at their end.
    Timestamp(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct KafkaSourceOptions {
    pub bootstrap_servers: String,
    pub topics: KafkaTopics,
    pub starting: KafkaStarting,
    pub max_offsets_per_trigger: Option<u64>,
    /// About this much input per batch, estimated from the sizes of the
    /// records read so far.
    pub max_bytes_per_trigger: u64,
    /// Records per second per partition; with a processing-time trigger it
    /// caps every partition's share of a batch at rate x interval.
    pub max_rate_per_partition: Option<u64>,
    pub fail_on_data_loss: bool,
    /// Commit processed offsets to this consumer group, for lag monitoring
    /// only: weir's own position lives in the checkpoint.
    pub group_id: Option<String>,
    /// Give up on a broker that stays unreachable this long.
    pub retry_timeout: Duration,
    /// librdkafka client properties, passed through (security, tuning).
    pub properties: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KafkaSinkOptions {
    pub bootstrap_servers: String,
    pub topic: String,
    /// Exactly-once by transactions (default) or at-least-once (idempotent
    /// producer, no transactions).
    pub exactly_once: bool,
    pub transaction_timeout: Duration,
    pub retry_timeout: Duration,
    pub properties: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
/// The consumer group a `[group]` pipeline's processes join.
pub struct ConsumerGroup {
    /// The consumer group every process of this pipeline joins.
    pub id: String,
    /// This process's name in the group: its transactional id is derived
    /// from it, so a restarted process with the same name fences its
    /// predecessor at once (`WEIR_GROUP_MEMBER` when not set here; a
    /// random one when neither is).
    pub member: Option<String>,
    /// A member silent this long is dropped from the group and its
    /// partitions move.
    pub session_timeout: Duration,
}
