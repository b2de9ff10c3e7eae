//! Offsets looked up on the brokers: where a new query starts reading
//! (`starting-offsets` or `starting-timestamp`, resolved once and recorded
//! in the checkpoint), and offsets by time, which also give every
//! partition's end in one request per broker.

use std::collections::BTreeSet;

use rdkafka::consumer::Consumer as _;
use rdkafka::{Offset as KOffset, TopicPartitionList};

use super::source::Tp;
use super::{KafkaOffsets, KafkaSource, REQUEST_TIMEOUT, kafka_err, with_retry};
use crate::kafka::KafkaStarting;
use weir_engine::ConnectorError;

impl KafkaSource {
    pub(super) fn start_offsets(
        &self,
        parts: &BTreeSet<Tp>,
    ) -> Result<KafkaOffsets, ConnectorError> {
        let mut out = KafkaOffsets::default();
        if let KafkaStarting::Timestamp(ts) = self.spec.starting {
            // No record at or after the timestamp: start at the end.
            return self.offsets_for_times(parts, KOffset::Offset(ts), "starting-timestamp");
        }
        if let KafkaStarting::Offsets(map) = &self.spec.starting {
            for (t, ps) in map {
                for p in ps.keys() {
                    if !parts.contains(&(t.clone(), *p)) {
                        return Err(ConnectorError(format!(
                            "starting-offsets names {t} partition {p}, which this source does not read"
                        )));
                    }
                }
            }
        }
        for tp in parts {
            let want = match &self.spec.starting {
                KafkaStarting::Earliest => -2,
                KafkaStarting::Latest => -1,
                KafkaStarting::Offsets(m) => m
                    .get(&tp.0)
                    .and_then(|ps| ps.get(&tp.1))
                    .copied()
                    .unwrap_or(-2),
                KafkaStarting::Timestamp(_) => unreachable!("handled above"),
            };
            let o = match want {
                -2 => self.watermarks(tp)?.0,
                -1 => self.watermarks(tp)?.1,
                o => o,
            };
            out.0.insert(tp.clone(), o);
        }
        Ok(out)
    }

    /// Each partition's first offset at or after `at` (a timestamp, or
    /// `End`), in one request per leader broker; a partition without one
    /// gets its end.
    pub(super) fn offsets_for_times(
        &self,
        parts: &BTreeSet<Tp>,
        at: KOffset,
        what: &str,
    ) -> Result<KafkaOffsets, ConnectorError> {
        let mut tpl = TopicPartitionList::new();
        for (t, p) in parts {
            tpl.add_partition_offset(t, *p, at)
                .map_err(kafka_err(what))?;
        }
        let found = with_retry(what, self.spec.retry_timeout, || {
            let r = self.admin.offsets_for_times(tpl.clone(), REQUEST_TIMEOUT);
            if r.is_err() {
                // As for the watermarks: after a broker restart the client
                // can answer "unknown partition" from a stale cache until
                // its metadata is refreshed.
                let _ = self.admin.fetch_metadata(None, REQUEST_TIMEOUT);
            }
            r
        })?;
        let mut out = KafkaOffsets::default();
        for tp in parts {
            let o = found
                .find_partition(&tp.0, tp.1)
                .and_then(|e| e.offset().to_raw())
                .filter(|o| *o >= 0);
            let o = match o {
                Some(o) => o,
                None => self.watermarks(tp)?.1,
            };
            out.0.insert(tp.clone(), o);
        }
        Ok(out)
    }
}
