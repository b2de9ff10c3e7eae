//! One partition's consumer, kept across batches: it reads exact offset
//! ranges, keeps its position between consecutive ranges (so librdkafka's
//! prefetching carries over), detects offsets lost to retention, and can
//! wait for the next record without spinning (continuous mode).

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use super::{Consumer, create, kafka_err, with_retry};
use weir_engine::encode_header;
use weir_engine::{ConnectorError, RecordBatch, RecordRef};

/// A record read past the end of a range (offset gaps from compaction or
/// transaction markers), or while waiting, kept for the next read.
struct Stashed {
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<u8>,
    timestamp: i64,
}

impl Stashed {
    /// `m`, with its headers encoded and its timestamp.
    fn of(m: &impl Message, (headers, timestamp): (&[u8], i64)) -> Self {
        Stashed {
            offset: m.offset(),
            key: m.key().map(<[u8]>::to_vec),
            value: m.payload().map(<[u8]>::to_vec),
            headers: headers.to_vec(),
            timestamp,
        }
    }
}

pub(super) struct PartitionConsumer {
    topic: String,
    partition: i32,
    consumer: Consumer,
    /// The offset the consumer delivers next, when positioned.
    next: Option<i64>,
    stash: Option<Stashed>,
    fail_on_data_loss: bool,
    retry_timeout: Duration,
    /// Records skipped because they were gone (fail-on-data-loss = false).
    pub lost: u64,
    headers: Vec<u8>,
}

impl PartitionConsumer {
    pub fn new(
        config: &ClientConfig,
        topic: &str,
        partition: i32,
        fail_on_data_loss: bool,
        retry_timeout: Duration,
    ) -> Result<Self, ConnectorError> {
        let consumer: Consumer =
            create(config, &format!("kafka consumer for {topic}/{partition}"))?;
        Ok(PartitionConsumer {
            topic: topic.into(),
            partition,
            consumer,
            next: None,
            stash: None,
            fail_on_data_loss,
            retry_timeout,
            lost: 0,
            headers: Vec::new(),
        })
    }

    fn name(&self) -> String {
        format!("kafka topic {} partition {}", self.topic, self.partition)
    }

    fn seek(&mut self, offset: i64) -> Result<(), ConnectorError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.topic, self.partition, Offset::Offset(offset))
            .map_err(kafka_err(self.name()))?;
        self.consumer.assign(&tpl).map_err(kafka_err(self.name()))?;
        self.next = Some(offset);
        self.stash = None;
        Ok(())
    }

    /// Stop fetching until the next read, which assigns the partition again
    /// at its position (an assigned consumer keeps fetching, about 100
    /// requests a second when idle; a paused one was measured to take about
    /// a second to fetch again once resumed).
    pub fn release(&mut self) {
        if self.next.is_none() {
            return;
        }
        if let Err(e) = self.consumer.unassign() {
            tracing::debug!("{}: unassign: {e}", self.name());
        }
        self.next = None;
        self.stash = None;
    }

    /// Low and high watermarks (the high one is the last stable offset for
    /// a read_committed consumer).
    pub fn watermarks(&self) -> Result<(i64, i64), ConnectorError> {
        with_retry(
            &format!("watermarks of {}", self.name()),
            self.retry_timeout,
            || super::watermarks(&self.consumer, &self.topic, self.partition),
        )
    }

    /// Where the next range should start if `from` is gone: `from` itself
    /// when it still exists, else the earliest offset (counting the loss),
    /// or an error under fail-on-data-loss.
    fn check_loss(&mut self, from: i64, until: i64) -> Result<i64, ConnectorError> {
        let (low, _) = self.watermarks()?;
        if from >= low {
            return Ok(from);
        }
        let gone = low.min(until) - from;
        if self.fail_on_data_loss {
            return Err(ConnectorError(format!(
                "{}: offsets {from}..{low} are no longer in Kafka (retention, or the topic was deleted and re-created); set fail-on-data-loss = false to skip them",
                self.name()
            )));
        }
        tracing::warn!(
            "{}: skipping {gone} record(s) at offsets {from}..{low}, no longer in Kafka (fail-on-data-loss = false)",
            self.name()
        );
        self.lost += gone as u64;
        Ok(low)
    }

    /// Append the records with offsets in `[from, until)` to `out`, waiting
    /// for them as long as the brokers stay reachable within the retry timeout.
    pub fn read_range(
        &mut self,
        from: i64,
        until: i64,
        out: &mut RecordBatch,
    ) -> Result<(), ConnectorError> {
        self.read(from, until, usize::MAX, None, out).map(|_| ())
    }

    /// Read from `from` (below `until`) up to `max` records; with a `wait`,
    /// return whatever arrived within it instead of completing the range.
    /// Returns the next position.
    pub fn read(
        &mut self,
        from: i64,
        until: i64,
        max: usize,
        wait: Option<Duration>,
        out: &mut RecordBatch,
    ) -> Result<i64, ConnectorError> {
        if from >= until || max == 0 {
            return Ok(from);
        }
        let mut from = from;
        let stash_fits = self.stash.as_ref().is_some_and(|s| s.offset >= from);
        if self.next != Some(from) && !stash_fits {
            from = self.check_loss(from, until)?;
            if from >= until {
                return Ok(until);
            }
            self.seek(from)?;
        }
        let mut pos = from;
        let mut taken = 0usize;
        if let Some(s) = self.stash.take() {
            if s.offset >= until {
                self.stash = Some(s);
                return Ok(until);
            }
            out.push_record(&RecordRef::new(
                s.key.as_deref(),
                s.value.as_deref(),
                &s.headers,
                s.timestamp,
                s.offset,
            ));
            pos = s.offset + 1;
            taken += 1;
        }
        let started = Instant::now();
        let mut warned = started;
        let deadline = wait.map(|w| started + w);
        while pos < until && taken < max {
            let poll = deadline.map_or(Duration::from_millis(100), |d| {
                whole_ms(d.saturating_duration_since(Instant::now()))
                    .min(Duration::from_millis(100))
            });
            let polled = self.consumer.poll(poll);
            if polled.is_none() && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            match polled {
                Some(Ok(m)) => {
                    let o = m.offset();
                    self.next = Some(o + 1);
                    if o < pos {
                        continue;
                    }
                    let ts = meta(&mut self.headers, &m);
                    if o >= until {
                        self.stash = Some(Stashed::of(&m, (&self.headers, ts)));
                        return Ok(until);
                    }
                    // A null payload (a tombstone) stays a record without a value.
                    out.push_record(&RecordRef::new(m.key(), m.payload(), &self.headers, ts, o));
                    pos = o + 1;
                    taken += 1;
                }
                Some(Err(KafkaError::PartitionEOF(_))) => {
                    // At the readable end: transaction markers or aborted
                    // records may fill the rest of the range; the position
                    // moves past them even though no record is delivered.
                    let position = self.position()?;
                    if position >= until {
                        self.next = Some(position);
                        return Ok(until);
                    }
                    pos = pos.max(position);
                }
                Some(Err(e)) => {
                    let code = e.rdkafka_error_code();
                    if matches!(
                        code,
                        Some(
                            RDKafkaErrorCode::AutoOffsetReset | RDKafkaErrorCode::OffsetOutOfRange
                        )
                    ) {
                        let resume = self.check_loss(pos, until)?;
                        if resume >= until {
                            self.next = None;
                            return Ok(until);
                        }
                        self.seek(resume)?;
                        pos = resume;
                    } else if super::retriable(&e) {
                        tracing::warn!("{}: {e}; still trying", self.name());
                    } else {
                        return Err(ConnectorError(format!("{}: {e}", self.name())));
                    }
                }
                None => {}
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if wait.is_none() && warned.elapsed() >= Duration::from_secs(10) {
                warned = Instant::now();
                if started.elapsed() >= self.retry_timeout {
                    return Err(ConnectorError(format!(
                        "{}: offsets {pos}..{until} were not delivered within {:?} (brokers unreachable?)",
                        self.name(),
                        self.retry_timeout
                    )));
                }
                tracing::warn!(
                    "{}: still waiting for offsets {pos}..{until} after {:.0?}",
                    self.name(),
                    started.elapsed()
                );
            }
        }
        Ok(pos)
    }

    /// Wait up to `timeout` for the record after the consumer's position;
    /// one that arrives is kept for the next read. An error other than a
    /// passing outage makes the next read seek afresh (the event itself is
    /// gone once polled).
    pub fn wait(&mut self, timeout: Duration) {
        // Something to read already, or not positioned (the next read seeks).
        if self.stash.is_some() || self.next.is_none() {
            return;
        }
        match self.consumer.poll(whole_ms(timeout)) {
            None | Some(Err(KafkaError::PartitionEOF(_))) => {}
            Some(Ok(m)) => {
                let ts = meta(&mut self.headers, &m);
                self.next = Some(m.offset() + 1);
                self.stash = Some(Stashed::of(&m, (&self.headers, ts)));
            }
            Some(Err(e)) if super::retriable(&e) => {
                tracing::warn!("{}: {e}; still trying", self.name());
            }
            Some(Err(_)) => self.next = None,
        }
    }

    fn position(&self) -> Result<i64, ConnectorError> {
        let tpl = self.consumer.position().map_err(kafka_err(self.name()))?;
        Ok(tpl
            .find_partition(&self.topic, self.partition)
            .and_then(|e| e.offset().to_raw())
            .unwrap_or(-1))
    }
}

/// Encode `m`'s headers into `headers` (cleared first); its timestamp.
pub(super) fn meta(headers: &mut Vec<u8>, m: &impl Message) -> i64 {
    headers.clear();
    if let Some(h) = m.headers() {
        for h in h.iter() {
            encode_header(headers, h.key, h.value.unwrap_or_default());
        }
    }
    m.timestamp()
        .to_millis()
        .unwrap_or(weir_engine::NO_TIMESTAMP)
}

/// `d` rounded up to whole milliseconds: librdkafka waits in milliseconds,
/// and rdkafka spins through a remainder below one.
pub(super) fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_micros().div_ceil(1000).min(u64::MAX as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_round_up_to_whole_milliseconds() {
        assert_eq!(whole_ms(Duration::ZERO), Duration::ZERO);
        assert_eq!(
            whole_ms(Duration::from_micros(100)),
            Duration::from_millis(1)
        );
        assert_eq!(
            whole_ms(Duration::from_micros(13_700)),
            Duration::from_millis(14)
        );
        assert_eq!(
            whole_ms(Duration::from_millis(50)),
            Duration::from_millis(50)
        );
    }
}
