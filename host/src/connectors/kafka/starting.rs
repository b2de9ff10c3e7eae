//! Where a new query starts reading: `starting-offsets` or
//! `starting-timestamp`, resolved against the brokers once and recorded in
//! the checkpoint.

use std::collections::BTreeSet;

use rdkafka::consumer::Consumer as _;
use rdkafka::{Offset as KOffset, TopicPartitionList};

use super::source::Tp;
use super::{KafkaOffsets, KafkaSource, REQUEST_TIMEOUT, kafka_err, with_retry};
use crate::engine::ConnectorError;
use crate::spec::KafkaStarting;

impl KafkaSource {
    pub(super) fn start_offsets(
        &self,
        parts: &BTreeSet<Tp>,
    ) -> Result<KafkaOffsets, ConnectorError> {
        let mut out = KafkaOffsets::default();
        if let KafkaStarting::Timestamp(ts) = self.spec.starting {
            let mut tpl = TopicPartitionList::new();
            for (t, p) in parts {
                tpl.add_partition_offset(t, *p, KOffset::Offset(ts))
                    .map_err(kafka_err("starting-timestamp"))?;
            }
            let found = with_retry(
                "offsets for starting-timestamp",
                self.spec.retry_timeout,
                || self.admin.offsets_for_times(tpl.clone(), REQUEST_TIMEOUT),
            )?;
            for tp in parts {
                let o = found
                    .find_partition(&tp.0, tp.1)
                    .and_then(|e| e.offset().to_raw())
                    .filter(|o| *o >= 0);
                // No record at or after the timestamp: start at the end.
                let o = match o {
                    Some(o) => o,
                    None => self.watermarks(tp)?.1,
                };
                out.0.insert(tp.clone(), o);
            }
            return Ok(out);
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
}
