//! The key exchange in front of a stateful transform, Spark's shuffle before
//! a stateful operator and Flink's `keyBy`: every record is routed by its
//! state key to one of a fixed number of state partitions, so each key's
//! state lives in exactly one place whatever the input's layout (files,
//! source partitions, batch sizes, cores).
//!
//! The route is Kafka's default partitioner, `toPositive(murmur2(key)) %
//! partitions`, over the key's bytes. A topic written by a Kafka producer
//! with default settings, by weir's log or Kafka sinks, or by `weir log
//! append --key-field`, is therefore already partitioned by its record key:
//! such a source may skip the exchange (`exchange = false`), and weir checks
//! every record's place instead of trusting the claim.

pub mod key_field;
pub mod murmur2;
mod scan;

use std::borrow::Cow;

use super::batch::{RecordBatch, RecordRef, StateKeys};

/// State partitions when the pipeline does not say.
pub const DEFAULT_STATE_PARTITIONS: u32 = 8;

/// Where a record's state key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateKey {
    /// The record's key (records without one are refused).
    RecordKey,
    /// A JSON field of the value, by path (`["user", "id"]` for `user.id`).
    Field(Vec<String>),
}

impl StateKey {
    /// As written in the pipeline and recorded in the checkpoint.
    pub fn describe(&self) -> String {
        match self {
            StateKey::RecordKey => "record-key".into(),
            StateKey::Field(p) => format!("field {}", p.join(".")),
        }
    }

    /// The state key of `rec`, or why it has none.
    pub fn of<'a>(&self, rec: &RecordRef<'a>) -> Result<Cow<'a, [u8]>, String> {
        match self {
            StateKey::RecordKey => rec.key.map(Cow::Borrowed).ok_or_else(|| {
                "record has no key (state.key = \"record-key\" keys state by the record key)".into()
            }),
            StateKey::Field(path) => key_field::extract(rec.value, path),
        }
    }
}

/// How a stateful query's records are spread over state partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    pub key: StateKey,
    /// Sources keyed otherwise than by `key`, by source index: two streams
    /// to be joined name their common key in their own fields.
    pub source_keys: std::collections::BTreeMap<usize, StateKey>,
    /// Fixed for the life of a checkpoint.
    pub partitions: u32,
    /// Route records by key; `false`: the (single) source is already
    /// partitioned by the key, so source partition p is state partition p,
    /// checked record by record.
    pub exchange: bool,
}

impl Default for Partitioning {
    fn default() -> Self {
        Partitioning {
            key: StateKey::RecordKey,
            source_keys: Default::default(),
            partitions: DEFAULT_STATE_PARTITIONS,
            exchange: true,
        }
    }
}

/// One input batch routed to state partitions.
#[derive(Debug, Default)]
pub struct Routed {
    /// (state partition, its records) for each partition that got any, in
    /// ascending order. Each batch keeps the input's source partition and
    /// offsets, so errors and dead letters still name where a record came
    /// from, and the records keep their input order.
    pub parts: Vec<(u32, RecordBatch)>,
    /// Records whose key could not be read, with why.
    pub unreadable: Option<(RecordBatch, Vec<String>)>,
}

/// A record found outside the state partition its key belongs to, in a
/// source that was declared partitioned by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misplaced {
    pub partition: u32,
    pub offset: i64,
    pub belongs: u32,
}

impl Partitioning {
    /// Where source `source`'s records find their state key.
    pub fn key_of(&self, source: usize) -> &StateKey {
        self.source_keys.get(&source).unwrap_or(&self.key)
    }

    /// As recorded in the checkpoint: the key, then each source's own.
    pub fn describe(&self) -> String {
        let mut d = self.key.describe();
        for (i, k) in &self.source_keys {
            d.push_str(&format!("; source {i}: {}", k.describe()));
        }
        d
    }

    /// The state partition of `key`.
    pub fn partition_of(&self, key: &[u8]) -> u32 {
        murmur2::partition_of(key, self.partitions)
    }

    /// [`Partitioning::route_timed`] for a batch of source `source` (named
    /// `source_name`), a misplaced record being the query's error.
    pub(crate) fn route_from(
        &self,
        source: usize,
        source_name: &str,
        batch: RecordBatch,
        time: Option<&str>,
    ) -> Result<Routed, crate::EngineError> {
        self.route_timed(source, batch, time)
            .map_err(|m| crate::EngineError::NotPartitionedByKey {
                source_name: source_name.to_string(),
                partition: m.partition,
                offset: m.offset,
                belongs: m.belongs,
                partitions: self.partitions,
            })
    }

    /// Route one batch of source `source` (see [`Routed`]).
    pub fn route(&self, source: usize, batch: RecordBatch) -> Result<Routed, Misplaced> {
        self.route_timed(source, batch, None)
    }

    /// [`Partitioning::route`], reading each record's event time from
    /// top-level field `time` in the pass that reads its key (a key field's
    /// source with event time): the times go in the timestamps, and a batch
    /// whose every time was read carries them as [`TimeKind::Event`].
    pub fn route_timed(
        &self,
        source: usize,
        mut batch: RecordBatch,
        time: Option<&str>,
    ) -> Result<Routed, Misplaced> {
        let key = self.key_of(source);
        let mut targets = Vec::with_capacity(batch.len());
        let mut bad: Vec<(usize, String)> = Vec::new();
        let with_time = match (key, time) {
            (StateKey::Field(path), Some(t)) => Some((path, t)),
            _ => None,
        };
        let mut times = Vec::new();
        // The keys read, kept with the batch (an unreadable record's as
        // empty: it never reaches the guest).
        let mut keys = StateKeys::with_capacity(batch.len());
        for i in 0..batch.len() {
            if let Some((path, t)) = with_time
                && let Some((k, ts)) = key_field::extract_with_time(batch.get(i).value, path, t)
            {
                targets.push(self.partition_of(&k));
                keys.push(&k);
                times.push(ts);
                continue;
            }
            match key.of(&batch.get(i)) {
                Ok(k) => {
                    targets.push(self.partition_of(&k));
                    keys.push(&k);
                }
                Err(why) => {
                    targets.push(u32::MAX);
                    keys.push(&[]);
                    bad.push((i, why));
                }
            }
        }
        batch.set_state_keys(keys);
        // Times read for only some records are read again by the
        // event-time split, with the reasons for the rest.
        if with_time.is_some() && times.len() == batch.len() {
            batch.set_event_times(times);
        }
        if !self.exchange {
            let p = batch.partition;
            if let Some(i) = targets.iter().position(|&t| t != p && t != u32::MAX) {
                return Err(Misplaced {
                    partition: p,
                    offset: batch.offsets()[i],
                    belongs: targets[i],
                });
            }
        }
        let mut routed = Routed::default();
        let first = targets.first().copied();
        // The common cases (a keyed source, a small batch) move the batch whole.
        if bad.is_empty() && first.is_some_and(|f| targets.iter().all(|&t| t == f)) {
            routed.parts.push((first.expect("non-empty"), batch));
            return Ok(routed);
        }
        // Each part sized up front (records and value bytes), not grown.
        let mut sizes = vec![(0usize, 0usize); self.partitions as usize];
        for (i, &t) in targets.iter().enumerate() {
            if let Some(s) = sizes.get_mut(t as usize) {
                s.0 += 1;
                s.1 += batch.get(i).value.len();
            }
        }
        let mut per: Vec<RecordBatch> = sizes
            .into_iter()
            .map(|(n, bytes)| batch.empty_like(n, bytes))
            .collect();
        let mut unreadable = batch.empty_like(0, 0);
        for (i, &t) in targets.iter().enumerate() {
            let r = batch.get(i);
            let to = if t == u32::MAX {
                &mut unreadable
            } else {
                &mut per[t as usize]
            };
            to.push_record(&r);
        }
        routed.parts = per
            .into_iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(q, b)| (q as u32, b))
            .collect();
        if !bad.is_empty() {
            routed.unreadable = Some((unreadable, bad.into_iter().map(|(_, w)| w).collect()));
        }
        Ok(routed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(partition: u32, keys: &[&str]) -> RecordBatch {
        let mut b = RecordBatch::new(partition);
        for (i, k) in keys.iter().enumerate() {
            let v = format!(r#"{{"k":"{k}"}}"#);
            b.push(Some(k.as_bytes()), v.as_bytes(), i as i64, 100 + i as i64);
        }
        b
    }

    #[test]
    fn records_go_to_their_keys_partition_in_order() {
        let p = Partitioning {
            key: StateKey::Field(vec!["k".into()]),
            partitions: 4,
            ..Partitioning::default()
        };
        let keys: Vec<String> = (0..40).map(|i| format!("user-{}", i % 7)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let r = p.route(0, batch(3, &keys)).unwrap();
        let mut seen = 0;
        for (q, b) in &r.parts {
            assert_eq!(b.partition, 3, "records keep their source partition");
            assert!(
                b.offsets().windows(2).all(|w| w[0] < w[1]),
                "input order kept"
            );
            for i in 0..b.len() {
                assert_eq!(p.partition_of(b.get(i).key.unwrap()), *q);
            }
            seen += b.len();
        }
        assert_eq!(seen, 40);
        // The same key goes to the same partition from any input batch.
        let again = p.route(0, batch(0, &["user-3"])).unwrap();
        let q = again.parts[0].0;
        assert!(r.parts.iter().any(|(x, b)| *x == q
            && (0..b.len()).any(|i| b.get(i).key == Some(&b"user-3"[..]))));
    }

    #[test]
    fn each_source_reads_its_own_key_field_into_the_same_partitions() {
        let p = Partitioning {
            key: StateKey::Field(vec!["k".into()]),
            source_keys: [(1, StateKey::Field(vec!["pid".into()]))].into(),
            partitions: 4,
            ..Partitioning::default()
        };
        let mut pay = RecordBatch::new(0);
        pay.push(None, br#"{"pid":"user-3","k":"other"}"#, 0, 0);
        let left = p.route(0, batch(0, &["user-3"])).unwrap();
        let right = p.route(1, pay).unwrap();
        assert_eq!(left.parts[0].0, right.parts[0].0);
        assert_eq!(right.parts[0].0, p.partition_of(b"user-3"));
        assert_eq!(p.describe(), "field k; source 1: field pid");
    }

    #[test]
    fn routed_records_carry_the_keys_they_were_routed_by() {
        let p = Partitioning {
            key: StateKey::Field(vec!["k".into()]),
            partitions: 3,
            ..Partitioning::default()
        };
        let keys: Vec<String> = (0..20).map(|i| format!("u{}", i % 5)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        // Split into parts, and whole (one key, one part).
        for input in [batch(0, &keys), batch(0, &["u1", "u1"])] {
            let r = p.route(0, input).unwrap();
            for (_, b) in &r.parts {
                assert!(b.has_state_keys());
                for i in 0..b.len() {
                    assert_eq!(b.get(i).state_key, b.get(i).key, "record {i}");
                }
            }
        }
    }

    #[test]
    fn unreadable_keys_are_set_aside_with_why() {
        let p = Partitioning::default();
        let mut b = batch(0, &["a"]);
        b.push(None, b"{}", 0, 7);
        let r = p.route(0, b).unwrap();
        let (bad, why) = r.unreadable.unwrap();
        assert_eq!(bad.offsets(), vec![7]);
        assert!(why[0].contains("record has no key"), "{}", why[0]);
        assert_eq!(r.parts.iter().map(|(_, b)| b.len()).sum::<usize>(), 1);
    }

    #[test]
    fn a_source_declared_keyed_is_checked() {
        let p = Partitioning {
            exchange: false,
            partitions: 2,
            ..Partitioning::default()
        };
        let home = p.partition_of(b"x");
        let r = p.route(0, batch(home, &["x", "x"])).unwrap();
        assert_eq!(r.parts.len(), 1);
        let err = p.route(0, batch(1 - home, &["x"])).unwrap_err();
        assert_eq!(
            err,
            Misplaced {
                partition: 1 - home,
                offset: 100,
                belongs: home
            }
        );
    }
}
