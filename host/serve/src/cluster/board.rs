//! The status topic: each node says, in a compacted Kafka topic, that it
//! is alive (which slots it holds, where its API is) and how each pipeline
//! it runs is doing; every node reads all of it, so any node can list every
//! pipeline with the node running it. Liveness is judged by when this node
//! received a node's newest report (never by comparing clocks across
//! machines), against the session timeout.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};

use super::ClusterConfig;
use super::client::Quiet;

/// A node's report of itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct NodeReport {
    pub node: String,
    pub url: Option<String>,
    pub slots: Vec<u32>,
    /// `tenant/name` of the pipelines it runs.
    pub pipelines: Vec<String>,
    /// Records between its config reader and the config log's end.
    pub config_lag: Option<i64>,
}

/// How one node runs one pipeline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct PipelineReport {
    pub state: String,
    pub restarts: u64,
    pub last_error: Option<String>,
    /// Input records not yet read, from its newest progress report.
    pub lag: Option<u64>,
}

/// What this node knows of the cluster.
#[derive(Default)]
struct Known {
    nodes: BTreeMap<String, (NodeReport, Instant)>,
    /// `tenant/name` -> node -> report.
    pipelines: BTreeMap<String, BTreeMap<String, PipelineReport>>,
}

pub struct Board {
    config: ClusterConfig,
    producer: BaseProducer<Quiet>,
    known: Mutex<Known>,
    /// What this node said last of each of its pipelines (said again only
    /// when it changes).
    said: Mutex<HashMap<String, PipelineReport>>,
}

fn node_key(node: &str) -> String {
    format!("node/{node}")
}

fn pipeline_key(pipeline: &str, node: &str) -> String {
    format!("pipeline/{pipeline}@{node}")
}

impl Board {
    pub fn new(config: &ClusterConfig) -> Result<Arc<Board>, String> {
        let producer: BaseProducer<Quiet> = config
            .client()
            .set("enable.idempotence", "true")
            .set("linger.ms", "5")
            .create_with_context(Quiet)
            .map_err(|e| format!("a Kafka producer for {}: {e}", config.status_topic()))?;
        Ok(Arc::new(Board {
            config: config.clone(),
            producer,
            known: Mutex::new(Known::default()),
            said: Mutex::new(HashMap::new()),
        }))
    }

    fn send(&self, key: &str, value: Option<Vec<u8>>) {
        let topic = self.config.status_topic();
        let mut r: BaseRecord<'_, str, [u8]> = BaseRecord::to(&topic).key(key);
        if let Some(v) = &value {
            r = r.payload(v.as_slice());
        }
        if let Err((e, _)) = self.producer.send(r) {
            tracing::warn!("cluster: reporting {key}: {e}");
        }
        self.producer.poll(Duration::ZERO);
    }

    /// Say this node is alive, with what it holds and runs.
    pub fn report_node(&self, report: &NodeReport) {
        let v = serde_json::to_vec(report).expect("serializes");
        self.send(&node_key(&report.node), Some(v));
    }

    /// Say this node is gone (shut down): other nodes forget it at once.
    pub fn gone(&self, node: &str) {
        self.send(&node_key(node), None);
    }

    /// Say how this node runs `pipeline` (`tenant/name`), or with `None`
    /// that it no longer runs it.
    pub fn report_pipeline(&self, pipeline: &str, report: Option<PipelineReport>) {
        let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
        if said.get(pipeline) == report.as_ref() {
            return;
        }
        let key = pipeline_key(pipeline, &self.config.node);
        match report {
            Some(r) => {
                self.send(&key, Some(serde_json::to_vec(&r).expect("serializes")));
                said.insert(pipeline.to_string(), r);
            }
            None => {
                self.send(&key, None);
                said.remove(pipeline);
            }
        }
    }

    /// Deliver what was said (before the process exits).
    pub fn flush(&self) {
        if let Err(e) = rdkafka::producer::Producer::flush(&self.producer, Duration::from_secs(5)) {
            tracing::warn!("cluster: the last status reports: {e}");
        }
    }

    /// The pipelines this node said it runs.
    pub fn said(&self) -> Vec<String> {
        self.said
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Whether a node's newest report arrived within the session timeout.
    fn alive(&self, seen: Instant) -> bool {
        seen.elapsed() <= self.config.session_timeout
    }

    /// How many nodes are alive (this one's own report included, once read
    /// back): read on every API request, so nothing is cloned.
    pub fn live_count(&self) -> usize {
        let k = self.known.lock().unwrap_or_else(|e| e.into_inner());
        k.nodes
            .values()
            .filter(|(_, seen)| self.alive(*seen))
            .count()
    }

    /// Every node heard of: its report, whether it is alive, and how long
    /// ago its report arrived.
    pub fn nodes(&self) -> Vec<(NodeReport, bool, Duration)> {
        let k = self.known.lock().unwrap_or_else(|e| e.into_inner());
        k.nodes
            .values()
            .map(|(r, seen)| (r.clone(), self.alive(*seen), seen.elapsed()))
            .collect()
    }

    /// The live nodes running `pipeline`, with their reports.
    pub fn runners(&self, pipeline: &str) -> Vec<(String, PipelineReport)> {
        let k = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let Some(by_node) = k.pipelines.get(pipeline) else {
            return vec![];
        };
        by_node
            .iter()
            .filter(|(node, _)| {
                k.nodes
                    .get(*node)
                    .is_some_and(|(_, seen)| self.alive(*seen))
            })
            .map(|(n, r)| (n.clone(), r.clone()))
            .collect()
    }

    /// Read the topic into what this node knows, for good (its own thread).
    pub fn read(self: Arc<Self>) {
        loop {
            if let Err(e) = self.read_pass() {
                tracing::error!("cluster: reading {}: {e}", self.config.status_topic());
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    fn read_pass(&self) -> Result<(), String> {
        let consumer: BaseConsumer<Quiet> = self
            .config
            .client()
            .set(
                "group.id",
                format!("{}.status-readers", self.config.topic_prefix),
            )
            .set("enable.auto.commit", "false")
            .create_with_context(Quiet)
            .map_err(|e| e.to_string())?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.config.status_topic(), 0, Offset::Beginning)
            .map_err(|e| e.to_string())?;
        consumer.assign(&tpl).map_err(|e| e.to_string())?;
        loop {
            let m = match consumer.poll(Duration::from_millis(500)) {
                None => continue,
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok(m)) => m,
            };
            let Some(key) = m.key().and_then(|k| std::str::from_utf8(k).ok()) else {
                continue;
            };
            // A report older than a session (read when this node started)
            // does not make its node look alive.
            let age = m
                .timestamp()
                .to_millis()
                .map(|t| weir_engine::now_ms().saturating_sub(t).max(0) as u64)
                .unwrap_or(0);
            let seen = Instant::now()
                .checked_sub(Duration::from_millis(age))
                .unwrap_or_else(Instant::now);
            let mut k = self.known.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(node) = key.strip_prefix("node/") {
                match m.payload().map(serde_json::from_slice::<NodeReport>) {
                    Some(Ok(r)) => {
                        k.nodes.insert(node.to_string(), (r, seen));
                    }
                    None => {
                        k.nodes.remove(node);
                    }
                    Some(Err(e)) => tracing::warn!("cluster: status {key}: {e}"),
                }
            } else if let Some((pipeline, node)) = key
                .strip_prefix("pipeline/")
                .and_then(|r| r.rsplit_once('@'))
            {
                let entry = k.pipelines.entry(pipeline.to_string()).or_default();
                match m.payload().map(serde_json::from_slice::<PipelineReport>) {
                    // Said by an earlier run of this node: no longer so.
                    Some(Ok(_))
                        if node == self.config.node
                            && !self
                                .said
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .contains_key(pipeline) =>
                    {
                        entry.remove(node);
                        drop(k);
                        self.send(key, None);
                    }
                    Some(Ok(r)) => {
                        entry.insert(node.to_string(), r);
                    }
                    None => {
                        entry.remove(node);
                    }
                    Some(Err(e)) => tracing::warn!("cluster: status {key}: {e}"),
                }
            }
        }
    }
}
