//! Kafka source and sink settings: parsed and checked here, without
//! librdkafka, so a pipeline file is validated the same way whether or not
//! this build has the Kafka connectors.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::units::parse_duration;
use weir_connectors::kafka::{KafkaSinkOptions, KafkaSourceOptions, KafkaStarting, KafkaTopics};

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawStarting {
    Named(String),
    Offsets(BTreeMap<String, BTreeMap<String, i64>>),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawKafkaSource {
    bootstrap_servers: String,
    topics: Option<Vec<String>>,
    topic_pattern: Option<String>,
    starting_offsets: Option<RawStarting>,
    starting_timestamp: Option<i64>,
    max_offsets_per_trigger: Option<u64>,
    max_bytes_per_trigger: Option<String>,
    max_rate_per_partition: Option<u64>,
    fail_on_data_loss: Option<bool>,
    group_id: Option<String>,
    retry_timeout: Option<String>,
    #[serde(default)]
    properties: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RawKafkaSink {
    bootstrap_servers: String,
    topic: String,
    delivery: Option<String>,
    transaction_timeout: Option<String>,
    retry_timeout: Option<String>,
    #[serde(default)]
    properties: BTreeMap<String, toml::Value>,
}

/// Properties weir sets itself: letting a pipeline override them would
/// silently break exactly-once or the checkpoint's ownership of offsets.
const MANAGED: &[(&str, &str)] = &[
    ("group.id", "use group-id (offsets live in the checkpoint)"),
    ("enable.auto.commit", "offsets live in the checkpoint"),
    (
        "auto.offset.reset",
        "use starting-offsets and fail-on-data-loss",
    ),
    (
        "transactional.id",
        "weir derives it from the query and the sink",
    ),
    ("enable.idempotence", "use delivery"),
    (
        "isolation.level",
        "weir reads committed records only (read_committed), which exactly-once needs",
    ),
    ("bootstrap.servers", "use bootstrap-servers"),
];

fn properties(
    at: &str,
    raw: BTreeMap<String, toml::Value>,
) -> Result<Vec<(String, String)>, String> {
    raw.into_iter()
        .map(|(k, v)| {
            if let Some((_, why)) = MANAGED.iter().find(|(m, _)| *m == k) {
                return Err(format!("{at}.properties: `{k}` is managed by weir ({why})"));
            }
            let v = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Float(f) => f.to_string(),
                other => {
                    return Err(format!(
                        "{at}.properties.{k}: `{other}` is not a string, number or boolean"
                    ));
                }
            };
            Ok((k, v))
        })
        .collect()
}

fn duration(at: &str, key: &str, v: Option<&str>, default: &str) -> Result<Duration, String> {
    parse_duration(v.unwrap_or(default)).map_err(|e| format!("{at}.{key}: {e}"))
}

impl RawKafkaSource {
    pub fn validate(self, at: &str) -> Result<KafkaSourceOptions, String> {
        let topics = match (self.topics, self.topic_pattern) {
            (Some(t), None) if !t.is_empty() => KafkaTopics::List(t),
            (None, Some(p)) => {
                regex::Regex::new(&format!("^(?:{p})$"))
                    .map_err(|e| format!("{at}.topic-pattern: {}", one_line(&e.to_string())))?;
                KafkaTopics::Pattern(p)
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{at}: give either topics or topic-pattern, not both"
                ));
            }
            _ => {
                return Err(format!(
                    "{at}: topics = [\"...\"] or topic-pattern is required"
                ));
            }
        };
        let starting = match (self.starting_offsets, self.starting_timestamp) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{at}: give either starting-offsets or starting-timestamp, not both"
                ));
            }
            (None, Some(ts)) => KafkaStarting::Timestamp(ts),
            (None, None) => KafkaStarting::Latest,
            (Some(RawStarting::Named(n)), None) => match n.as_str() {
                "earliest" => KafkaStarting::Earliest,
                "latest" => KafkaStarting::Latest,
                o => {
                    return Err(format!(
                        "{at}.starting-offsets: `{o}` (use \"earliest\", \"latest\" or a table of topic -> partition -> offset)"
                    ));
                }
            },
            (Some(RawStarting::Offsets(map)), None) => {
                let mut out = BTreeMap::new();
                for (topic, parts) in map {
                    let mut per = BTreeMap::new();
                    for (p, o) in parts {
                        let p: i32 = p.parse().ok().filter(|p| *p >= 0).ok_or_else(|| {
                            format!(
                                "{at}.starting-offsets.{topic}: `{p}` is not a partition number"
                            )
                        })?;
                        if o < -2 {
                            return Err(format!(
                                "{at}.starting-offsets.{topic}.{p}: {o} (use an offset, -2 for earliest or -1 for latest)"
                            ));
                        }
                        per.insert(p, o);
                    }
                    out.insert(topic, per);
                }
                KafkaStarting::Offsets(out)
            }
        };
        for (key, v) in [
            ("max-offsets-per-trigger", self.max_offsets_per_trigger),
            ("max-rate-per-partition", self.max_rate_per_partition),
        ] {
            if v == Some(0) {
                return Err(format!("{at}.{key} must be at least 1"));
            }
        }
        let max_bytes_per_trigger =
            super::connectors::batch_bytes(self.max_bytes_per_trigger.as_deref(), at)?;
        Ok(KafkaSourceOptions {
            bootstrap_servers: self.bootstrap_servers,
            topics,
            starting,
            max_offsets_per_trigger: self.max_offsets_per_trigger,
            max_bytes_per_trigger,
            max_rate_per_partition: self.max_rate_per_partition,
            fail_on_data_loss: self.fail_on_data_loss.unwrap_or(true),
            group_id: self.group_id,
            retry_timeout: duration(at, "retry-timeout", self.retry_timeout.as_deref(), "5m")?,
            properties: properties(at, self.properties)?,
        })
    }
}

impl RawKafkaSink {
    pub fn validate(self, at: &str) -> Result<KafkaSinkOptions, String> {
        let exactly_once = match self.delivery.as_deref().unwrap_or("exactly-once") {
            "exactly-once" => true,
            "at-least-once" => false,
            d => {
                return Err(format!(
                    "{at}.delivery: `{d}` (use \"exactly-once\" or \"at-least-once\")"
                ));
            }
        };
        Ok(KafkaSinkOptions {
            bootstrap_servers: self.bootstrap_servers,
            topic: self.topic,
            exactly_once,
            transaction_timeout: duration(
                at,
                "transaction-timeout",
                self.transaction_timeout.as_deref(),
                "60s",
            )?,
            retry_timeout: duration(at, "retry-timeout", self.retry_timeout.as_deref(), "5m")?,
            properties: properties(at, self.properties)?,
        })
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
