//! Kafka positions as kept in `offsets/N`: Spark's JSON shape,
//! `{"topic": {"0": 42, "1": 7}}`, each value the next offset to read.

use std::collections::BTreeMap;

use weir_engine::{ConnectorError, Offset};

/// Next offset to read per (topic, partition).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KafkaOffsets(pub BTreeMap<(String, i32), i64>);

impl KafkaOffsets {
    pub fn to_offset(&self) -> Offset {
        let mut topics: BTreeMap<&str, BTreeMap<String, i64>> = BTreeMap::new();
        for ((t, p), o) in &self.0 {
            topics.entry(t).or_default().insert(p.to_string(), *o);
        }
        Offset::of(&topics)
    }

    pub fn from_offset(o: &Offset) -> Result<Self, ConnectorError> {
        let bad = |why: &str| ConnectorError(format!("kafka offset {o}: {why}"));
        let topics: BTreeMap<String, BTreeMap<String, i64>> = o
            .read()
            .map_err(|_| bad("not an object of topics, each an object of partition offsets"))?;
        let mut out = BTreeMap::new();
        for (t, parts) in topics {
            for (p, off) in parts {
                let p: i32 = p.parse().map_err(|_| bad("a partition is not a number"))?;
                if off < 0 {
                    return Err(bad("an offset is not a non-negative integer"));
                }
                out.insert((t.clone(), p), off);
            }
        }
        Ok(KafkaOffsets(out))
    }

    /// The position of a partition; one this offset does not know (a
    /// partition added later) starts at 0, its earliest possible offset.
    pub fn get(&self, topic: &str, partition: i32) -> i64 {
        self.0
            .get(&(topic.to_string(), partition))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_in_sparks_shape() {
        let mut o = KafkaOffsets::default();
        o.0.insert(("a".into(), 0), 5);
        o.0.insert(("a".into(), 1), 7);
        o.0.insert(("b".into(), 0), 0);
        let j = o.to_offset();
        assert_eq!(j.as_json(), &json!({"a": {"0": 5, "1": 7}, "b": {"0": 0}}));
        assert_eq!(KafkaOffsets::from_offset(&j).unwrap(), o);
        assert_eq!(o.get("c", 3), 0);
    }

    #[test]
    fn malformed_offsets_are_named() {
        let e = KafkaOffsets::from_offset(&Offset::of(&json!({"a": {"x": 1}}))).unwrap_err();
        assert!(e.0.contains("partition is not a number"), "{e}");
        let e = KafkaOffsets::from_offset(&Offset::of(&json!([1, 2]))).unwrap_err();
        assert!(e.0.contains("not an object"), "{e}");
    }
}
