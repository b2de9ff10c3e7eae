//! Event time: where a record's event time comes from, and the split of a
//! batch into on-time, late and unusable records against the watermark
//! (see [`super::watermark`]).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use crate::batch::{NO_TIMESTAMP, RecordBatch, TimeKind};

/// What happens to a record older than the watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatePolicy {
    /// Drop it, counted in `numRowsDroppedByWatermark`.
    Drop,
    /// Hand it to the pipeline's error policy (fail, skip, dead-letter).
    Reject,
}

/// A pipeline's `[event-time]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTimeOptions {
    /// Top-level JSON field of the value holding the event time (epoch ms
    /// or an RFC 3339 string); `None` uses the record's timestamp.
    pub field: Option<String>,
    /// Sources whose event time is in another field, by source index (a
    /// join's two streams each carry their own time).
    pub source_fields: std::collections::BTreeMap<usize, String>,
    /// How far the watermark trails the largest event time seen.
    pub delay: Duration,
    pub late: LatePolicy,
    /// A partition whose newest event time has not moved for this long (in
    /// processing time) stops holding the watermark back, until it moves
    /// again (Flink's idleness); `None`: every partition always counts.
    pub idle_timeout: Option<Duration>,
    pub rule: super::watermark::WatermarkRule,
}

impl EventTimeOptions {
    /// The field source `source`'s event time is read from (`None`: the
    /// record timestamp).
    pub fn field_of(&self, source: usize) -> Option<&str> {
        self.source_fields
            .get(&source)
            .or(self.field.as_ref())
            .map(String::as_str)
    }
}

/// Min, max and sum of the event times of a batch, for progress.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EventStats {
    pub min: i64,
    pub max: i64,
    pub sum: i128,
    pub count: u64,
}

impl EventStats {
    pub fn add(&mut self, t: i64) {
        if self.count == 0 {
            (self.min, self.max) = (t, t);
        } else {
            self.min = self.min.min(t);
            self.max = self.max.max(t);
        }
        self.sum += t as i128;
        self.count += 1;
    }

    pub fn merge(&mut self, o: &EventStats) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *o;
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.count += o.count;
    }
}

/// A batch split by event time.
#[derive(Debug, Default)]
pub struct Split {
    pub on_time: RecordBatch,
    pub late: RecordBatch,
    /// Records whose event time could not be read, with why.
    pub unreadable: RecordBatch,
    pub unreadable_reasons: Vec<String>,
    pub stats: EventStats,
}

/// Set each record's timestamp to its event time, read from `field` (or
/// the record timestamp), and split the batch against `watermark` (records
/// strictly older are late). The common case, nothing late or unreadable,
/// moves the batch without copying it.
pub fn split(mut batch: RecordBatch, field: Option<&str>, watermark: Option<i64>) -> Split {
    let mut bad: Vec<(usize, String)> = Vec::new();
    match field {
        // The exchange read them already, from the same field.
        Some(_) if batch.time_kind() == TimeKind::Event => {}
        Some(field) => {
            let mut times = Vec::with_capacity(batch.len());
            for (i, r) in batch.iter().enumerate() {
                match extract(r.value, field) {
                    Ok(t) => times.push(t),
                    Err(why) => {
                        times.push(r.timestamp);
                        bad.push((i, why));
                    }
                }
            }
            batch.set_event_times(times);
        }
        // Event time 0 would make such a record late forever, silently.
        None => {
            for (i, &t) in batch.timestamps().iter().enumerate() {
                if t == NO_TIMESTAMP {
                    bad.push((
                        i,
                        "record has no timestamp to take its event time from (set event-time.field to read it from the value)".into(),
                    ));
                }
            }
        }
    }
    let wm = watermark.unwrap_or(i64::MIN);
    let mut stats = EventStats::default();
    let mut any_late = false;
    let mut b = bad.iter().peekable();
    for (i, &t) in batch.timestamps().iter().enumerate() {
        if b.peek().is_some_and(|(j, _)| *j == i) {
            b.next();
            continue;
        }
        stats.add(t);
        any_late |= t < wm;
    }
    let p = batch.partition;
    if !any_late && bad.is_empty() {
        return Split {
            on_time: batch,
            late: RecordBatch::new(p),
            unreadable: RecordBatch::new(p),
            unreadable_reasons: Vec::new(),
            stats,
        };
    }
    let mut s = Split {
        on_time: batch.empty_like(0, 0),
        late: batch.empty_like(0, 0),
        unreadable: RecordBatch::new(p),
        unreadable_reasons: Vec::new(),
        stats,
    };
    let mut b = bad.into_iter().peekable();
    for i in 0..batch.len() {
        let r = batch.get(i);
        let target = if b.peek().is_some_and(|(j, _)| *j == i) {
            s.unreadable_reasons.push(b.next().expect("peeked").1);
            &mut s.unreadable
        } else if r.timestamp < wm {
            &mut s.late
        } else {
            &mut s.on_time
        };
        target.push_record(&r);
    }
    s
}

/// The event time in `field` of a JSON object.
pub fn extract(value: &[u8], field: &str) -> Result<i64, String> {
    let mut de = serde_json::Deserializer::from_slice(value);
    match FieldSeed(field).deserialize(&mut de) {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(format!("event time field `{field}` is missing")),
        Err(e) => Err(format!("cannot read event time field `{field}`: {e}")),
    }
}

struct FieldSeed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Option<i64>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<i64>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Option<i64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<i64>, A::Error> {
        let mut found = None;
        while let Some(is_field) = map.next_key_seed(KeyIs(self.0))? {
            if is_field {
                found = Some(map.next_value::<Time>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Compares a map key with the wanted name without allocating it.
struct KeyIs<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// An event time: epoch milliseconds, or an RFC 3339 timestamp.
pub(crate) struct Time(pub(crate) i64);

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        d.deserialize_any(TimeVisitor)
    }
}

struct TimeVisitor;

impl Visitor<'_> for TimeVisitor {
    type Value = Time;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("epoch milliseconds or an RFC 3339 timestamp")
    }
    fn visit_i64<E>(self, v: i64) -> Result<Time, E> {
        Ok(Time(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Time, E> {
        i64::try_from(v)
            .map(Time)
            .map_err(|_| E::custom("event time out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Time, E> {
        Ok(Time(v as i64))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Time, E> {
        let t = humantime::parse_rfc3339_weak(v).map_err(|e| E::custom(format!("{v:?}: {e}")))?;
        let ms = t
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| E::custom("event time before 1970"))?
            .as_millis();
        Ok(Time(ms as i64))
    }
}

/// An event time as Spark prints it in progress (RFC 3339, milliseconds).
pub fn iso(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordRef;

    #[test]
    fn event_times_are_read_from_a_field() {
        assert_eq!(extract(br#"{"a":{"ts":1},"ts":42,"z":[1]}"#, "ts"), Ok(42));
        assert_eq!(
            extract(br#"{"ts":"1970-01-01T00:00:01.5Z"}"#, "ts"),
            Ok(1500)
        );
        assert_eq!(extract(br#"{"ts":12.9}"#, "ts"), Ok(12));
        assert!(
            extract(br#"{"x":1}"#, "ts")
                .unwrap_err()
                .contains("`ts` is missing")
        );
        assert!(extract(b"nope", "ts").unwrap_err().contains("cannot read"));
        assert!(
            extract(br#"{"ts":true}"#, "ts")
                .unwrap_err()
                .contains("cannot read")
        );
    }

    #[test]
    fn batches_split_into_on_time_late_and_unreadable() {
        let mut b = RecordBatch::new(3);
        for (i, v) in [r#"{"ts":5}"#, r#"{"ts":1}"#, "x", r#"{"ts":9}"#]
            .iter()
            .enumerate()
        {
            b.push_record(&RecordRef::new(None, Some(v.as_bytes()), &[], 0, i as i64));
        }
        let o = EventTimeOptions {
            field: Some("ts".into()),
            source_fields: [(1, "pay_ts".into())].into(),
            delay: Duration::ZERO,
            late: LatePolicy::Drop,
            idle_timeout: None,
            rule: Default::default(),
        };
        assert_eq!((o.field_of(0), o.field_of(1)), (Some("ts"), Some("pay_ts")));
        let s = split(b.clone(), o.field_of(0), Some(4));
        assert_eq!(s.on_time.offsets(), vec![0, 3]);
        assert_eq!(s.on_time.timestamps(), vec![5, 9]);
        assert_eq!(s.late.offsets(), vec![1]);
        assert_eq!(s.unreadable.offsets(), vec![2]);
        assert_eq!((s.stats.min, s.stats.max, s.stats.count), (1, 9, 3));
        let s = split(b.clone(), None, None);
        assert_eq!(s.on_time, b);
        // A record without a timestamp is not given event time 0.
        let mut b = RecordBatch::new(0);
        b.push_record(&RecordRef::new(None, Some(b"x"), &[], NO_TIMESTAMP, 5));
        b.push_record(&RecordRef::new(None, Some(b"y"), &[], 7, 6));
        let s = split(b, None, Some(1));
        assert_eq!(s.on_time.offsets(), vec![6]);
        assert_eq!(s.unreadable.offsets(), vec![5]);
        assert!(s.unreadable_reasons[0].contains("record has no timestamp"));
    }
}
