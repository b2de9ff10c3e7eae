//! Turning `max-bytes-per-trigger` into a record count for a Kafka batch,
//! whose offset range is planned before its records are read: from the
//! average size of the records read so far.

use weir_engine::RecordBatch;

/// A running average of record sizes; before any record is read, batches
/// take at most `FIRST_BATCH` records, so even huge records cannot make
/// the first batch huge.
#[derive(Default)]
pub(super) struct RecordSize {
    bytes: u128,
    records: u128,
}

pub(super) const FIRST_BATCH: u64 = 1000;

impl RecordSize {
    pub fn add(&mut self, batch: &RecordBatch) {
        self.bytes += batch.byte_len() as u128;
        self.records += batch.len() as u128;
    }

    /// Records that fit in `bytes`, at least one.
    pub fn records_in(&self, bytes: u64) -> u64 {
        if self.records == 0 {
            return FIRST_BATCH;
        }
        let avg = (self.bytes / self.records).max(1);
        ((bytes as u128 / avg).clamp(1, u64::MAX as u128)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_cap_counts_records_at_their_average_size_read_so_far() {
        let mut size = RecordSize::default();
        // Nothing read yet: a small first batch whatever the cap.
        assert_eq!(size.records_in(16 << 20), FIRST_BATCH);
        let mut b = RecordBatch::new(0);
        for i in 0..10 {
            // 76-byte values, no key or headers: 100 bytes with the columns.
            b.push(None, &[b'x'; 76], 0, i);
        }
        size.add(&b);
        assert_eq!(size.records_in(16 << 20), (16 << 20) / 100);
        assert_eq!(size.records_in(50), 1);
    }
}
