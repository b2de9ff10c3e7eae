//! Generates `rows-per-second` rows, like Spark's rate source: row r has
//! value `{"timestamp": <ms>, "value": r}`. The start time is kept in the
//! checkpoint so every replayed range regenerates the same rows.

use weir_engine::durable::{encode_entry, read_entry};
use weir_engine::now_ms;
use weir_engine::{ConnectorError, Offset, RecordBatch, Source, SourceCheckpoint};

pub struct RateSource {
    rows_per_second: u64,
    partitions: u32,
    max_rows_per_trigger: Option<u64>,
    start_ms: i64,
}

impl RateSource {
    pub fn new(rows_per_second: u64, partitions: u32, max_rows_per_trigger: Option<u64>) -> Self {
        RateSource {
            rows_per_second: rows_per_second.max(1),
            partitions: partitions.max(1),
            max_rows_per_trigger,
            start_ms: now_ms(),
        }
    }

    fn count(o: &Offset) -> Result<u64, ConnectorError> {
        o.read::<u64>()
            .map_err(|_| ConnectorError(format!("rate source offset {o} is not a row count")))
    }

    fn row_time(&self, row: u64) -> i64 {
        self.start_ms + (row as i128 * 1000 / self.rows_per_second as i128) as i64
    }
}

impl Source for RateSource {
    fn identity(&self) -> String {
        format!("rate:{}/s", self.rows_per_second)
    }

    fn attach(&mut self, cp: SourceCheckpoint) -> Result<(), ConnectorError> {
        let path = format!("{}/start", cp.dir);
        match read_entry::<i64>(&*cp.store, &path).map_err(|e| ConnectorError(e.to_string()))? {
            Some(t) => self.start_ms = t,
            None => cp
                .store
                .write(&path, &encode_entry(&self.start_ms))
                .map_err(|e| ConnectorError(e.to_string()))?,
        }
        Ok(())
    }

    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        Ok(Offset::of(&0u64))
    }

    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        let elapsed = (now_ms() - self.start_ms).max(0) as u128;
        Ok(Offset::of(
            &((elapsed * self.rows_per_second as u128 / 1000) as u64),
        ))
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let (s, u) = (Self::count(start)?, Self::count(upto)?);
        Ok(Offset::of(
            &self.max_rows_per_trigger.map_or(u, |m| u.min(s + m)).max(s),
        ))
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        let (s, e) = (Self::count(start)?, Self::count(end)?);
        let mut parts: Vec<RecordBatch> = (0..self.partitions).map(RecordBatch::new).collect();
        let p = self.partitions as u64;
        for row in s..e {
            let ts = self.row_time(row);
            let value = format!("{{\"timestamp\":{ts},\"value\":{row}}}");
            parts[(row % p) as usize].push(None, value.as_bytes(), ts, (row / p) as i64);
        }
        Ok(parts.into_iter().filter(|b| !b.is_empty()).collect())
    }

    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        Some(
            Self::count(latest)
                .ok()?
                .saturating_sub(Self::count(offset).ok()?),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use weir_engine::LocalCheckpointStore;

    #[test]
    fn replayed_ranges_regenerate_the_same_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
        let cp = SourceCheckpoint {
            store,
            dir: "sources/0".into(),
        };
        let mut a = RateSource::new(1000, 2, Some(5));
        a.attach(cp.clone()).unwrap();
        assert_eq!(
            a.next_end(&Offset::of(&0), &Offset::of(&100)).unwrap(),
            Offset::of(&5)
        );
        let first = a.read(&Offset::of(&0), &Offset::of(&5)).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].len() + first[1].len(), 5);
        std::thread::sleep(std::time::Duration::from_millis(5));
        // A restarted source keeps the recorded start time.
        let mut b = RateSource::new(1000, 2, Some(5));
        b.attach(cp).unwrap();
        assert_eq!(b.read(&Offset::of(&0), &Offset::of(&5)).unwrap(), first);
        assert_eq!(first[1].get(0).value, br#"{"timestamp":"#.iter().copied().chain(format!("{},\"value\":1}}", a.row_time(1)).bytes()).collect::<Vec<u8>>());
    }
}
