//! The control plane's topics, made by whichever node starts first: the
//! config and status topics compacted with one partition each (one order
//! of changes), the slots topic with one partition per slot.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::types::RDKafkaErrorCode;

use super::ClusterConfig;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Make the topics that are missing; returns the slots topic's partition
/// count (the slots there are).
pub fn ensure(config: &ClusterConfig) -> Result<u32, String> {
    let admin: AdminClient<DefaultClientContext> = config
        .client()
        .create()
        .map_err(|e| format!("a Kafka admin client for {}: {e}", config.bootstrap_servers))?;
    let (config_topic, status_topic, slots_topic) = (
        config.config_topic(),
        config.status_topic(),
        config.slots_topic(),
    );
    let compacted = [("cleanup.policy", "compact")];
    // The broker's default replication factor (-1).
    let topics = [
        NewTopic::new(&config_topic, 1, TopicReplication::Fixed(-1))
            .set(compacted[0].0, compacted[0].1),
        NewTopic::new(&status_topic, 1, TopicReplication::Fixed(-1))
            .set(compacted[0].0, compacted[0].1),
        NewTopic::new(
            &slots_topic,
            config.slots as i32,
            TopicReplication::Fixed(-1),
        ),
    ];
    let opts = AdminOptions::new().request_timeout(Some(REQUEST_TIMEOUT));
    let made = futures::executor::block_on(admin.create_topics(&topics, &opts)).map_err(|e| {
        format!(
            "creating the cluster's topics on {}: {e}",
            config.bootstrap_servers
        )
    })?;
    for r in made {
        match r {
            Ok(t) => tracing::info!("cluster: made topic {t}"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, e)) => return Err(format!("creating topic {t}: {e}")),
        }
    }
    let probe: BaseConsumer = config.client().create().map_err(|e| e.to_string())?;
    let meta = probe
        .fetch_metadata(Some(&slots_topic), REQUEST_TIMEOUT)
        .map_err(|e| format!("reading {slots_topic}'s metadata: {e}"))?;
    let partitions = meta
        .topics()
        .first()
        .map(|t| t.partitions().len() as u32)
        .unwrap_or(0);
    if partitions == 0 {
        return Err(format!("{slots_topic} has no partitions"));
    }
    if partitions != config.slots {
        tracing::warn!(
            "cluster: {slots_topic} has {partitions} partitions, not the configured {}: pipelines hash onto {partitions} slots",
            config.slots
        );
    }
    Ok(partitions)
}
