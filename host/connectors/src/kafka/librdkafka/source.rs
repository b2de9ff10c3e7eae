//! The Kafka source: offset ranges planned from watermarks, partitions
//! discovered between batches, per-partition consumers reused across them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{CommitMode, Consumer as _};
use rdkafka::{ClientConfig, Offset as KOffset, TopicPartitionList};

use super::super::{KafkaSourceOptions, KafkaTopics};
use super::consumer::PartitionConsumer;
use super::record_size::RecordSize;
use super::watch::Watch;
use super::{Consumer, KafkaOffsets, REQUEST_TIMEOUT, client_config, create, with_retry};
use crate::{min_limit, rate_limited_ends};
use weir_engine::parallel::Workers;
use weir_engine::{ConnectorError, Offset, RecordBatch, Source};

pub(super) type Tp = (String, i32);

pub struct KafkaSource {
    pub(super) spec: KafkaSourceOptions,
    pub(super) config: ClientConfig,
    pub(super) admin: Consumer,
    pattern: Option<regex::Regex>,
    consumers: HashMap<Tp, PartitionConsumer>,
    /// Records per partition per batch (max-rate-per-partition x interval).
    per_partition_cap: Option<u64>,
    rate_limit: Option<u64>,
    /// Continuous mode: the partitions, fixed when the query starts.
    pub(super) fixed: Vec<Tp>,
    group: Option<Consumer>,
    pub(super) lag_cache: Option<(Instant, Vec<u64>)>,
    /// The end offsets the query last asked for, and the consumer that
    /// waits past them while the query is idle.
    last_ends: Option<KafkaOffsets>,
    watch: Option<Watch>,
    /// Bytes per record read so far (key, value, headers and per-record
    /// columns), which turns max-bytes-per-trigger into a record count.
    record_bytes: RecordSize,
    /// The query's threads, which read a batch's partitions in parallel.
    workers: Option<Arc<Workers>>,
}

impl KafkaSource {
    /// `batch_interval`: the processing-time trigger's, which turns
    /// max-rate-per-partition into a per-batch cap.
    pub fn new(
        spec: KafkaSourceOptions,
        batch_interval: Option<Duration>,
    ) -> Result<Self, ConnectorError> {
        let config = client_config(
            &spec.bootstrap_servers,
            &[
                // librdkafka wants a group even for assign(); it is never
                // joined and nothing is committed to it.
                ("group.id", "weir-direct-reader"),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("auto.offset.reset", "error"),
                ("isolation.level", "read_committed"),
                ("enable.partition.eof", "true"),
                ("fetch.wait.max.ms", "10"),
            ],
            &spec.properties,
        );
        let admin: Consumer = create(&config, "kafka source client")?;
        let group = match &spec.group_id {
            Some(g) => Some(create(
                config.clone().set("group.id", g),
                &format!("kafka consumer group {g}"),
            )?),
            None => None,
        };
        let pattern = match &spec.topics {
            KafkaTopics::Pattern(p) => Some(
                regex::Regex::new(&format!("^(?:{p})$"))
                    .map_err(|e| ConnectorError(format!("topic-pattern: {e}")))?,
            ),
            KafkaTopics::List(_) => None,
        };
        let per_partition_cap = match (spec.max_rate_per_partition, batch_interval) {
            (Some(r), Some(i)) => Some(((r as f64 * i.as_secs_f64()).ceil() as u64).max(1)),
            _ => None,
        };
        Ok(KafkaSource {
            spec,
            config,
            admin,
            pattern,
            consumers: HashMap::new(),
            workers: None,
            per_partition_cap,
            rate_limit: None,
            fixed: Vec::new(),
            group,
            lag_cache: None,
            last_ends: None,
            watch: None,
            record_bytes: RecordSize::default(),
        })
    }

    /// Continuous mode reads a fixed set of partitions: the ones there now.
    pub fn continuous(spec: KafkaSourceOptions) -> Result<Self, ConnectorError> {
        let mut s = Self::new(spec, None)?;
        s.fixed = s.discover()?.into_iter().collect();
        Ok(s)
    }

    /// Every partition of the source's topics, as the brokers see them now.
    fn discover(&self) -> Result<BTreeSet<Tp>, ConnectorError> {
        let md = with_retry("fetching metadata", self.spec.retry_timeout, || {
            self.admin.fetch_metadata(None, REQUEST_TIMEOUT)
        })?;
        let mut out = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for t in md.topics() {
            let wanted = match (&self.spec.topics, &self.pattern) {
                (KafkaTopics::List(l), _) => l.iter().any(|n| n == t.name()),
                (_, Some(re)) => !t.name().starts_with("__") && re.is_match(t.name()),
                _ => false,
            };
            if wanted && t.error().is_none() {
                seen.insert(t.name().to_string());
                out.extend(
                    t.partitions()
                        .iter()
                        .map(|p| (t.name().to_string(), p.id())),
                );
            }
        }
        if let KafkaTopics::List(l) = &self.spec.topics
            && let Some(missing) = l.iter().find(|t| !seen.contains(*t))
        {
            return Err(ConnectorError(format!(
                "kafka topic `{missing}` does not exist on {} (create it first)",
                self.spec.bootstrap_servers
            )));
        }
        Ok(out)
    }

    pub(super) fn watermarks(&self, (t, p): &Tp) -> Result<(i64, i64), ConnectorError> {
        with_retry(
            &format!("watermarks of {t}/{p}"),
            self.spec.retry_timeout,
            || super::watermarks(&self.admin, t, *p),
        )
    }

    /// Every partition's end: one ListOffsets request per leader broker
    /// (librdkafka's offsets-for-times at "latest", which under
    /// read_committed is the last stable offset, as for the watermarks)
    /// instead of two requests per partition.
    fn latest(&self) -> Result<KafkaOffsets, ConnectorError> {
        let parts = self.discover()?;
        self.offsets_for_times(&parts, KOffset::End, "end offsets")
    }

    fn gone(&self, what: String) -> Result<(), ConnectorError> {
        if self.spec.fail_on_data_loss {
            return Err(ConnectorError(format!(
                "{what}; set fail-on-data-loss = false to skip it"
            )));
        }
        tracing::warn!("{what}; skipping it (fail-on-data-loss = false)");
        Ok(())
    }

    fn consumer(&mut self, tp: &Tp) -> Result<&mut PartitionConsumer, ConnectorError> {
        if !self.consumers.contains_key(tp) {
            let c = PartitionConsumer::new(
                &self.config,
                &tp.0,
                tp.1,
                self.spec.fail_on_data_loss,
                self.spec.retry_timeout,
            )?;
            self.consumers.insert(tp.clone(), c);
        }
        Ok(self.consumers.get_mut(tp).expect("inserted"))
    }

    /// Idle: release the range readers and wait on the watcher, armed at the
    /// ends the query last saw (see `watch`). False when it cannot: no ends
    /// seen yet.
    fn watch_for_data(&mut self, timeout: Duration) -> Result<bool, ConnectorError> {
        let Some(ends) = &self.last_ends else {
            return Ok(false);
        };
        if self.watch.is_none() {
            self.watch = Some(Watch::new(&self.config)?);
        }
        let w = self.watch.as_mut().expect("created");
        if !w.armed() {
            for c in self.consumers.values_mut() {
                c.release();
            }
            w.arm(ends)?;
        }
        w.wait(timeout);
        Ok(true)
    }

    fn lost(&self) -> u64 {
        self.consumers.values().map(|c| c.lost).sum()
    }
}

impl Source for KafkaSource {
    fn identity(&self) -> String {
        match &self.spec.topics {
            KafkaTopics::List(l) => format!("kafka:{}", l.join(",")),
            KafkaTopics::Pattern(p) => format!("kafka:pattern={p}"),
        }
    }

    fn use_workers(&mut self, workers: Arc<Workers>) {
        self.workers = Some(workers);
    }

    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        let parts = self.discover()?;
        Ok(self.start_offsets(&parts)?.to_offset())
    }

    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        let latest = self.latest()?;
        let json = latest.to_offset();
        self.last_ends = Some(latest);
        Ok(json)
    }

    fn wakes_on_data(&self) -> bool {
        true
    }

    fn wait_for_data(&mut self, timeout: Duration) {
        let waited = self.watch_for_data(timeout).unwrap_or_else(|e| {
            tracing::warn!("kafka: waiting for new records: {e}");
            false
        });
        if !waited {
            // Without a watcher the query polls, as the default idle wait does.
            std::thread::sleep(timeout.min(Duration::from_millis(20)));
        }
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let start = KafkaOffsets::from_offset(start)?;
        let upto = KafkaOffsets::from_offset(upto)?;
        for (t, p) in start.0.keys() {
            if !upto.0.contains_key(&(t.clone(), *p)) {
                self.gone(format!(
                    "kafka topic {t} partition {p} is gone (topic deleted?)"
                ))?;
            }
        }
        let keys: Vec<&Tp> = upto.0.keys().collect();
        let mut starts = Vec::with_capacity(keys.len());
        let mut ends = Vec::with_capacity(keys.len());
        for tp in &keys {
            let s = start.get(&tp.0, tp.1);
            let mut e = upto.0[*tp];
            if e < s {
                self.gone(format!(
                    "kafka topic {} partition {}: its end offset {e} is below weir's position {s} (topic re-created?)",
                    tp.0, tp.1
                ))?;
                e = s;
            }
            starts.push(s as u64);
            ends.push(e as u64);
        }
        let by_size = self
            .record_bytes
            .records_in(self.spec.max_bytes_per_trigger);
        let limit = min_limit(
            min_limit(self.spec.max_offsets_per_trigger, self.rate_limit),
            Some(by_size),
        );
        let mut ends = rate_limited_ends(&starts, &ends, limit);
        if let Some(cap) = self.per_partition_cap {
            for (e, s) in ends.iter_mut().zip(&starts) {
                *e = (*e).min(s + cap);
            }
        }
        let mut out = KafkaOffsets::default();
        for (tp, e) in keys.into_iter().zip(ends) {
            out.0.insert(tp.clone(), e as i64);
        }
        Ok(out.to_offset())
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        if let Some(w) = &mut self.watch {
            w.disarm();
        }
        let start = KafkaOffsets::from_offset(start)?;
        let end = KafkaOffsets::from_offset(end)?;
        let mut ranges: BTreeMap<Tp, (i64, i64)> = BTreeMap::new();
        for (tp, e) in &end.0 {
            let s = start.get(&tp.0, tp.1);
            if *e > s {
                self.consumer(tp)?;
                ranges.insert(tp.clone(), (s, *e));
            }
        }
        // Partitions are read in parallel (on the query's threads when lent),
        // each by its own consumer.
        let jobs: Vec<(&Tp, &mut PartitionConsumer, (i64, i64))> = {
            let mut jobs: Vec<_> = self
                .consumers
                .iter_mut()
                .filter_map(|(tp, c)| ranges.get(tp).map(|r| (tp, c, *r)))
                .collect();
            jobs.sort_by(|a, b| a.0.cmp(b.0));
            jobs
        };
        let read = |(tp, c, (s, e)): (&Tp, &mut PartitionConsumer, (i64, i64))| {
            let mut b = RecordBatch::with_capacity(tp.1 as u32, (e - s) as usize, 0);
            c.read_range(s, e, &mut b).map(|()| b)
        };
        let results: Vec<Result<RecordBatch, ConnectorError>> = match &self.workers {
            Some(w) => w.map(jobs, read),
            None => jobs.into_iter().map(read).collect(),
        };
        let batches: Vec<RecordBatch> = results
            .into_iter()
            .filter(|r| r.as_ref().map_or(true, |b| !b.is_empty()))
            .collect::<Result<_, _>>()?;
        for b in &batches {
            self.record_bytes.add(b);
        }
        Ok(batches)
    }

    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        let a = KafkaOffsets::from_offset(offset).ok()?;
        let b = KafkaOffsets::from_offset(latest).ok()?;
        Some(
            b.0.iter()
                .map(|((t, p), l)| (*l - a.get(t, *p)).max(0) as u64)
                .sum(),
        )
    }

    fn set_rate_limit(&mut self, max_records: Option<u64>) {
        self.rate_limit = max_records;
    }

    fn committed(&mut self, end: &Offset) {
        let (Some(group), Ok(end)) = (&self.group, KafkaOffsets::from_offset(end)) else {
            return;
        };
        let mut tpl = TopicPartitionList::new();
        for ((t, p), o) in &end.0 {
            let _ = tpl.add_partition_offset(t, *p, KOffset::Offset(*o));
        }
        if let Err(e) = group.commit(&tpl, CommitMode::Async) {
            tracing::warn!("kafka: committing offsets to the monitoring group failed: {e}");
        }
    }

    fn metrics(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        m.insert("dataLossRecords".into(), self.lost().to_string());
        m
    }
}
