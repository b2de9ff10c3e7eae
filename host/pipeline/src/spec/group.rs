//! `[group]`: run the pipeline as one member of a Kafka consumer group, so
//! several processes share its input partitions (see `engine::group`).

use std::time::Duration;

use serde::Deserialize;

use super::units::parse_duration;
use super::{SinkSpec, SourceSpec};
use weir_connectors::kafka::{ConsumerGroup, KafkaTopics};
use weir_engine::Trigger;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawGroup {
    pub id: String,
    pub member: Option<String>,
    pub session_timeout: Option<String>,
}

impl RawGroup {
    /// Check that the rest of the pipeline can run in a group.
    pub fn validate(
        self,
        sources: &[SourceSpec],
        sinks: &[(Option<String>, SinkSpec)],
        trigger: Trigger,
    ) -> Result<ConsumerGroup, String> {
        if self.id.trim().is_empty() {
            return Err("group.id must not be empty".into());
        }
        let session_timeout = match &self.session_timeout {
            Some(s) => parse_duration(s).map_err(|e| format!("group.session-timeout: {e}"))?,
            None => Duration::from_secs(10),
        };
        if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&session_timeout) {
            return Err("group.session-timeout must be between 1s and 1h".into());
        }
        let source = match sources {
            [SourceSpec::Kafka(k)] => k,
            _ => {
                return Err(
                    "[group] needs exactly one source, of type \"kafka\" (its partitions are what the group shares)"
                        .into(),
                );
            }
        };
        if !matches!(&source.topics, KafkaTopics::List(l) if l.len() == 1) {
            return Err("[group] reads one Kafka topic: give the source one `topic`".into());
        }
        for (route, sink) in sinks {
            let name = route.as_deref().unwrap_or("default");
            match sink {
                SinkSpec::Kafka(k) if !k.exactly_once => {
                    return Err(format!(
                        "sink.{name}: [group] commits output and offsets in one transaction: the sink must be exactly-once"
                    ));
                }
                SinkSpec::Kafka(k) if k.bootstrap_servers != source.bootstrap_servers => {
                    return Err(format!(
                        "sink.{name}: [group] writes in the source cluster's transactions: use the source's bootstrap-servers"
                    ));
                }
                SinkSpec::Kafka(_) => {}
                _ => {
                    return Err(format!(
                        "sink.{name}: [group] needs Kafka sinks (output and offsets commit in one Kafka transaction)"
                    ));
                }
            }
        }
        if matches!(trigger, Trigger::Once | Trigger::AvailableNow) {
            return Err(
                "[group] members run until stopped: use the default or a processing-time trigger"
                    .into(),
            );
        }
        Ok(ConsumerGroup {
            id: self.id,
            member: self.member,
            session_timeout,
        })
    }
}
