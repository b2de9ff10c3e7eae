//! `weir serve --cluster FILE`: the Kafka cluster that carries the
//! service's shared state and the object store its components and
//! checkpoints live on. Every node reads the same file (only `node` and
//! `advertise-url` differ), parsed raw and validated into
//! [`ClusterConfig`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// Default slot count: a dozen nodes can share the work before a slot
/// count must be chosen by hand.
const DEFAULT_SLOTS: u32 = 12;
/// Most slots: each is a partition of the slots topic.
const MAX_SLOTS: u32 = 1024;
/// Kafka's own group defaults bound the session timeout (the broker's
/// `group.min.session.timeout.ms` and `group.max.session.timeout.ms`).
const MIN_SESSION: Duration = Duration::from_secs(6);
const MAX_SESSION: Duration = Duration::from_secs(300);

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct Raw {
    bootstrap_servers: String,
    #[serde(default)]
    topic_prefix: Option<String>,
    #[serde(default)]
    slots: Option<u32>,
    #[serde(default)]
    session_timeout: Option<String>,
    object_store: String,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    advertise_url: Option<String>,
    /// librdkafka properties for the control plane's own clients
    /// (`security.protocol`, `sasl.*`, ...).
    #[serde(default)]
    properties: BTreeMap<String, String>,
}

/// A validated cluster configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    pub bootstrap_servers: String,
    /// Topics `<prefix>.config`, `<prefix>.status` and `<prefix>.slots`,
    /// and the nodes' consumer group `<prefix>.nodes`.
    pub topic_prefix: String,
    /// Pipelines are hashed onto this many slots (the slots topic's
    /// partitions); fixed once the topic exists.
    pub slots: u32,
    /// A node not heard from for this long loses its slots.
    pub session_timeout: Duration,
    /// `s3://bucket[/prefix]` (or `gs://`, `az://`), without a trailing `/`.
    pub object_store: String,
    /// This node's name, unique in the cluster.
    pub node: String,
    /// Where other nodes' users reach this node's API (shown by
    /// `/v1/cluster`).
    pub advertise_url: Option<String>,
    pub properties: BTreeMap<String, String>,
}

impl ClusterConfig {
    /// Parse `text` (the file `source`); `default_node` names this node
    /// unless the file does.
    pub fn parse(text: &str, source: &str, default_node: &str) -> Result<ClusterConfig, String> {
        let raw: Raw = toml::from_str(text).map_err(|e| format!("{source}: {}", e.message()))?;
        let bad = |key: &str, why: String| format!("{source}: {key}: {why}");
        if raw.bootstrap_servers.trim().is_empty() {
            return Err(bad("bootstrap-servers", "name at least one broker".into()));
        }
        let topic_prefix = raw.topic_prefix.unwrap_or_else(|| "weir".into());
        let plain = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        };
        if topic_prefix.is_empty() || topic_prefix.len() > 200 || !plain(&topic_prefix) {
            return Err(bad(
                "topic-prefix",
                "use 1-200 letters, digits, `.`, `_` and `-` (it begins Kafka topic names)".into(),
            ));
        }
        let slots = raw.slots.unwrap_or(DEFAULT_SLOTS);
        if !(1..=MAX_SLOTS).contains(&slots) {
            return Err(bad(
                "slots",
                format!("{slots} is not between 1 and {MAX_SLOTS}"),
            ));
        }
        let session_timeout = match raw.session_timeout {
            None => Duration::from_secs(10),
            Some(s) => weir_pipeline::spec::parse_duration(&s)
                .map_err(|e| bad("session-timeout", e.to_string()))?,
        };
        if !(MIN_SESSION..=MAX_SESSION).contains(&session_timeout) {
            return Err(bad(
                "session-timeout",
                format!(
                    "{session_timeout:?} is not between {MIN_SESSION:?} and {MAX_SESSION:?} (Kafka's group limits)"
                ),
            ));
        }
        let object_store = raw.object_store.trim_end_matches('/').to_string();
        let scheme = object_store.split_once("://").map(|(s, _)| s);
        if !matches!(
            scheme,
            Some("s3" | "s3a" | "gs" | "az" | "azure" | "abfs" | "abfss")
        ) {
            return Err(bad(
                "object-store",
                format!(
                    "`{object_store}` is not an object store URL (s3://bucket/prefix, gs://, az://)"
                ),
            ));
        }
        let node = raw.node.unwrap_or_else(|| default_node.to_string());
        let node_ok = (1..=100).contains(&node.len())
            && node
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'));
        if !node_ok {
            return Err(bad(
                "node",
                format!(
                    "`{}` is not a node name (1-100 letters, digits, `.`, `_`, `-`, `:`)",
                    node.escape_debug()
                ),
            ));
        }
        Ok(ClusterConfig {
            bootstrap_servers: raw.bootstrap_servers,
            topic_prefix,
            slots,
            session_timeout,
            object_store,
            node,
            advertise_url: raw.advertise_url,
            properties: raw.properties,
        })
    }

    pub fn config_topic(&self) -> String {
        format!("{}.config", self.topic_prefix)
    }

    pub fn status_topic(&self) -> String {
        format!("{}.status", self.topic_prefix)
    }

    pub fn slots_topic(&self) -> String {
        format!("{}.slots", self.topic_prefix)
    }

    /// A Kafka client configuration for the control plane.
    pub fn client(&self) -> rdkafka::ClientConfig {
        let mut c = rdkafka::ClientConfig::new();
        c.set("bootstrap.servers", &self.bootstrap_servers);
        c.set_log_level(rdkafka::config::RDKafkaLogLevel::Warning);
        for (k, v) in &self.properties {
            c.set(k, v);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_is_validated_with_one_line_per_mistake() {
        let ok = "bootstrap-servers = \"k:9092\"\nobject-store = \"s3://b/c/\"\n";
        let c = ClusterConfig::parse(ok, "c.toml", "host:7600").unwrap();
        assert_eq!(c.object_store, "s3://b/c");
        assert_eq!(c.node, "host:7600");
        assert_eq!((c.slots, c.session_timeout), (12, Duration::from_secs(10)));
        assert_eq!(c.config_topic(), "weir.config");
        for (extra, says) in [
            ("slots = 0\n", "slots: 0 is not between"),
            (
                "session-timeout = \"1s\"\n",
                "session-timeout: 1s is not between",
            ),
            ("topic-prefix = \"a b\"\n", "topic-prefix: use"),
            ("node = \"a/b\"\n", "node: `a/b` is not a node name"),
            ("colour = 1\n", "unknown field `colour`"),
        ] {
            let err = ClusterConfig::parse(&format!("{ok}{extra}"), "c.toml", "n").unwrap_err();
            assert!(err.contains(says), "{extra}: {err}");
        }
        let err = ClusterConfig::parse(
            "bootstrap-servers = \"k:9092\"\nobject-store = \"/var/x\"\n",
            "c.toml",
            "n",
        )
        .unwrap_err();
        assert!(err.contains("is not an object store URL"), "{err}");
    }
}
