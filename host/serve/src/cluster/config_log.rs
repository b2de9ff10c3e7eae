//! The config topic: the cluster's shared state as a compacted Kafka log
//! of [`Change`]s (Kafka Connect keeps its connector configs the same way),
//! read by every node into its own SQLite store.
//!
//! Writers take turns through one transactional id: a node that wants to
//! write calls `init_transactions`, which fences every other node's
//! producer (aborting a transaction it had open), then reads the log to its
//! end, decides against its store and commits. A node fenced between its
//! decision and its commit sees the commit fail and decides again on the
//! newer state, so a decision and its write are one step cluster-wide:
//! quotas count every node's rows, and no record in the log was refused,
//! which a compacted log needs (its newest record of a key must rebuild
//! the row alone). A node that just took the turn commits a `seal` record
//! first, so the log's last visible record is always at its end's offset
//! less its commit marker, and "read to the end" can be seen.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::ClusterConfig;
use super::client::Quiet;
use crate::catalog::{Change, Decide};
use crate::error::ApiError;
use crate::store::Store;

/// How long one write may take, fencing and retries included.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a writer waits for its reader to reach the log's end before
/// it takes the turn again (which seals the log's end).
const CATCH_UP: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The decision refused the write (the caller's error).
    #[error("{}", .0.detail)]
    Refused(ApiError),
    #[error("the cluster's config topic: {0}")]
    Kafka(String),
}

/// Offsets of the records a transaction's producer delivered.
#[derive(Default)]
struct Delivered {
    last: Mutex<Option<i64>>,
    failed: Mutex<Option<String>>,
}

impl ClientContext for Delivered {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        super::client::log(level, fac, message)
    }

    fn error(&self, e: KafkaError, reason: &str) {
        super::client::error(e, reason)
    }
}

impl ProducerContext for Delivered {
    type DeliveryOpaque = ();
    fn delivery(&self, r: &DeliveryResult<'_>, _: ()) {
        match r {
            Ok(m) => {
                let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
                *last = Some(last.map_or(m.offset(), |l| l.max(m.offset())));
            }
            Err((e, _)) => {
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            }
        }
    }
}

/// How far this node's reader has applied the log.
#[derive(Default)]
struct Applied {
    /// The offset after the last record applied.
    next: i64,
    /// The whole log was read once (the store holds the cluster's state).
    loaded: bool,
}

pub struct ConfigLog {
    config: ClusterConfig,
    topic: String,
    /// The writing producer while it holds the turn.
    writer: Mutex<Option<BaseProducer<Delivered>>>,
    applied: Mutex<Applied>,
    moved: Condvar,
    /// A consumer kept for watermark requests.
    watermarks: BaseConsumer<Quiet>,
}

fn kafka(e: KafkaError) -> WriteError {
    WriteError::Kafka(e.to_string())
}

impl ConfigLog {
    pub fn new(config: &ClusterConfig) -> Result<ConfigLog, String> {
        let watermarks: BaseConsumer<Quiet> = config
            .client()
            .create_with_context(Quiet)
            .map_err(|e| format!("a Kafka client for {}: {e}", config.bootstrap_servers))?;
        Ok(ConfigLog {
            topic: config.config_topic(),
            config: config.clone(),
            writer: Mutex::new(None),
            applied: Mutex::new(Applied::default()),
            moved: Condvar::new(),
            watermarks,
        })
    }

    /// The log's end (its high watermark).
    fn end(&self) -> Result<i64, WriteError> {
        self.watermarks
            .fetch_watermarks(&self.topic, 0, REQUEST_TIMEOUT)
            .map(|(_, high)| high)
            .map_err(kafka)
    }

    /// Wait until the reader has applied every record before `offset`.
    fn applied_to(&self, offset: i64, within: Duration) -> bool {
        let until = Instant::now() + within;
        let mut a = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        while !(a.loaded && a.next >= offset) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            a = self
                .moved
                .wait_timeout(a, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// Wait (up to `within`) for the whole log to be read once.
    pub fn wait_loaded(&self, within: Duration) -> bool {
        self.applied_to(0, within)
    }

    /// The number of records between the reader and the log's end.
    pub fn lag(&self) -> Option<i64> {
        let end = self.end().ok()?;
        let next = self.applied.lock().unwrap_or_else(|e| e.into_inner()).next;
        Some((end - next - 1).max(0))
    }

    /// A producer that holds the turn: made, initialized (which fences the
    /// node that held it) and sealed.
    fn take_turn(&self) -> Result<BaseProducer<Delivered>, WriteError> {
        let mut c = self.config.client();
        c.set(
            "transactional.id",
            format!("{}.config-writer", self.config.topic_prefix),
        )
        .set("transaction.timeout.ms", "10000")
        .set("enable.idempotence", "true");
        let p: BaseProducer<Delivered> =
            c.create_with_context(Delivered::default()).map_err(kafka)?;
        p.init_transactions(REQUEST_TIMEOUT).map_err(kafka)?;
        p.begin_transaction().map_err(kafka)?;
        let node = self.config.node.clone();
        p.send(BaseRecord::to(&self.topic).key("seal").payload(&node))
            .map_err(|(e, _)| kafka(e))?;
        p.commit_transaction(REQUEST_TIMEOUT).map_err(kafka)?;
        Ok(p)
    }

    /// See [`crate::catalog::Catalog::write`].
    pub fn write<T>(&self, store: &Store, decide: &mut Decide<T>) -> Result<T, WriteError> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let started = Instant::now();
        let mut last_error = String::new();
        while started.elapsed() < WRITE_TIMEOUT {
            match self.write_once(&mut writer, store, decide) {
                Ok(answer) => return Ok(answer),
                Err(WriteError::Refused(e)) => return Err(WriteError::Refused(e)),
                Err(WriteError::Kafka(e)) => {
                    // Fenced by another node's turn, or Kafka failed: take
                    // the turn again after a moment (jittered, so that two
                    // nodes do not keep fencing each other).
                    tracing::debug!("cluster: config write retried: {e}");
                    *writer = None;
                    last_error = e;
                    let jitter = u64::from(weir_engine::now_ms().unsigned_abs() as u32 % 100);
                    std::thread::sleep(Duration::from_millis(20 + jitter));
                }
            }
        }
        Err(WriteError::Kafka(format!(
            "no write within {WRITE_TIMEOUT:?}: {last_error}"
        )))
    }

    fn write_once<T>(
        &self,
        writer: &mut Option<BaseProducer<Delivered>>,
        store: &Store,
        decide: &mut Decide<T>,
    ) -> Result<T, WriteError> {
        if writer.is_none() {
            *writer = Some(self.take_turn()?);
        }
        let p = writer.as_ref().expect("made above");
        // Everything committed before this point is read: the last
        // visible record sits just before the end's commit marker.
        let end = self.end()?;
        if !self.applied_to(end - 1, CATCH_UP) {
            return Err(WriteError::Kafka(format!(
                "the log was not read to its end ({end}) within {CATCH_UP:?}"
            )));
        }
        let (changes, answer) = decide(store).map_err(WriteError::Refused)?;
        if changes.is_empty() {
            return Ok(answer);
        }
        *p.context().last.lock().unwrap_or_else(|e| e.into_inner()) = None;
        p.begin_transaction().map_err(kafka)?;
        let records: Vec<(String, Option<Vec<u8>>)> =
            changes.iter().map(|c| (c.key(), c.value())).collect();
        for (key, value) in &records {
            let mut r: BaseRecord<'_, str, [u8]> = BaseRecord::to(&self.topic).key(key.as_str());
            if let Some(v) = value {
                r = r.payload(v.as_slice());
            }
            p.send(r).map_err(|(e, _)| kafka(e))?;
        }
        p.commit_transaction(REQUEST_TIMEOUT).map_err(kafka)?;
        if let Some(e) = p
            .context()
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            return Err(WriteError::Kafka(e));
        }
        let last = p
            .context()
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| {
                WriteError::Kafka("the committed records' offsets were not reported".into())
            })?;
        // Read-your-writes on this node: the answer goes out once the
        // store holds the change.
        if !self.applied_to(last + 1, WRITE_TIMEOUT) {
            return Err(WriteError::Kafka(
                "the write was committed but not read back".into(),
            ));
        }
        Ok(answer)
    }

    /// Read the log into `store` for good: all of it once (the newest
    /// record of each key, rebuilt in dependency order), then each record
    /// as it comes. `changed` is told after each step. Runs on its own
    /// thread.
    pub fn read_into(self: Arc<Self>, store: Arc<Store>, changed: impl Fn()) {
        loop {
            if let Err(e) = self.read_pass(&store, &changed) {
                tracing::error!(
                    "cluster: reading {}: {e}; reading it again from its start",
                    self.topic
                );
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    fn read_pass(&self, store: &Store, changed: &impl Fn()) -> Result<(), String> {
        let consumer: BaseConsumer<Quiet> = self
            .config
            .client()
            .set(
                "group.id",
                format!("{}.config-readers", self.config.topic_prefix),
            )
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .set("enable.partition.eof", "true")
            // A write answers once read back: the broker holds an empty
            // fetch this long at most.
            .set("fetch.wait.max.ms", "10")
            .create_with_context(Quiet)
            .map_err(|e| e.to_string())?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.topic, 0, Offset::Beginning)
            .map_err(|e| e.to_string())?;
        consumer.assign(&tpl).map_err(|e| e.to_string())?;
        // The whole log: the newest record of each key.
        let mut newest: BTreeMap<String, Option<Change>> = BTreeMap::new();
        let mut next = 0;
        loop {
            match consumer.poll(Duration::from_millis(200)) {
                None => continue,
                Some(Err(KafkaError::PartitionEOF(_))) => break,
                Some(Err(e)) => {
                    tracing::warn!("cluster: reading {}: {e}", self.topic);
                    continue;
                }
                Some(Ok(m)) => {
                    next = m.offset() + 1;
                    let Some(key) = m.key().and_then(|k| std::str::from_utf8(k).ok()) else {
                        continue;
                    };
                    match Change::from_record(key, m.payload()) {
                        Ok(Some(c)) => {
                            newest.insert(key.to_string(), Some(c).filter(|c| c.value().is_some()));
                        }
                        Ok(None) => {}
                        Err(e) => tracing::error!("cluster: {e} (skipped)"),
                    }
                }
            }
        }
        let mut all: Vec<Change> = newest.into_values().flatten().collect();
        store
            .rebuild(&mut all)
            .map_err(|e| format!("rebuilding the store: {e}"))?;
        self.advance(next, true);
        changed();
        // Then each record as it comes, a poll's worth per transaction.
        loop {
            let mut batch = Vec::new();
            let mut timeout = Duration::from_millis(500);
            while batch.len() < 500 {
                match consumer.poll(timeout) {
                    None => break,
                    Some(Err(KafkaError::PartitionEOF(_))) => break,
                    Some(Err(e)) => {
                        tracing::warn!("cluster: reading {}: {e}", self.topic);
                        break;
                    }
                    Some(Ok(m)) => {
                        next = m.offset() + 1;
                        let key = m.key().and_then(|k| std::str::from_utf8(k).ok());
                        match key.map(|k| Change::from_record(k, m.payload())) {
                            Some(Ok(Some(c))) => batch.push(c),
                            Some(Err(e)) => tracing::error!("cluster: {e} (skipped)"),
                            _ => {}
                        }
                        timeout = Duration::ZERO;
                    }
                }
            }
            // A row whose parent is not there (records compacted out of
            // their order while this node lagged): rebuild from the start.
            store
                .apply(&batch)
                .map_err(|e| format!("applying records: {e}"))?;
            let moved = self.applied.lock().unwrap_or_else(|e| e.into_inner()).next != next;
            self.advance(next, true);
            if moved {
                changed();
            }
        }
    }

    fn advance(&self, next: i64, loaded: bool) {
        let mut a = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        a.next = next;
        a.loaded = loaded;
        self.moved.notify_all();
    }
}
