//! The engine's batch representation: columnar, one buffer per field, the
//! same layout as the WIT `batch`/`output-batch` records. Batches stay in this
//! form from source to sink, so the hot path never allocates per record.

/// The timestamp of a record that has none (Kafka's `NO_TIMESTAMP`).
pub const NO_TIMESTAMP: i64 = -1;

pub use weir_wire::{EncodingError, span};
pub(crate) use weir_wire::{
    check_ends, check_len, check_optional as check_optional_column, malformed,
};

/// A record header as a borrowed `(name, value)` pair.
pub type HeaderRef<'a> = (&'a str, &'a [u8]);

mod columns;
pub use columns::{ColumnParts, ColumnSlices, Columns, HeaderIter, Headers};

/// What a batch's timestamps are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TimeKind {
    /// The times the source gave (Kafka's record timestamps, a log's
    /// append times).
    #[default]
    Source,
    /// The event times the query reads from the values: the key exchange
    /// read them in the pass that read the keys, so the event-time split
    /// does not parse the values again.
    Event,
}

/// A batch of input records from one source partition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordBatch {
    pub partition: u32,
    columns: Columns,
    timestamps: Vec<i64>,
    offsets: Vec<i64>,
    time_kind: TimeKind,
    /// The state key each record was routed by: the key exchange keeps
    /// the keys it read, so a guest can ask for them
    /// (`context.state-keys`) instead of reading them again. In use only
    /// while there is one per record (see [`RecordBatch::state_key`]); a
    /// record added without one leaves the column short for good, so it
    /// never names the wrong record's key.
    state_keys: StateKeys,
}

/// Keys back to back, and where each ends (key `i` is
/// `bytes[ends[i-1]..ends[i]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateKeys {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl StateKeys {
    pub fn with_capacity(keys: usize) -> Self {
        StateKeys {
            bytes: Vec::with_capacity(keys.saturating_mul(16)),
            ends: Vec::with_capacity(keys),
        }
    }

    pub fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(weir_wire::end(self.bytes.len()));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The keys back to back and where each ends, as the WIT
    /// `context.state-keys` lends them.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn ends(&self) -> &[u32] {
        &self.ends
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// One record of a batch, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordRef<'a> {
    pub key: Option<&'a [u8]>,
    /// Empty when the record has no value (see `has_value`).
    pub value: &'a [u8],
    /// False for a record without a value (a Kafka tombstone).
    pub has_value: bool,
    pub headers: &'a [u8],
    pub timestamp: i64,
    pub offset: i64,
    /// The key the record was routed by (see `RecordBatch::state_keys`).
    pub state_key: Option<&'a [u8]>,
}

impl<'a> RecordRef<'a> {
    /// A record whose headers are in the batch encoding (as a log or a
    /// Kafka consumer holds them); `value: None` is a tombstone.
    pub fn new(
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
        headers: &'a [u8],
        timestamp: i64,
        offset: i64,
    ) -> Self {
        RecordRef {
            key,
            value: value.unwrap_or_default(),
            has_value: value.is_some(),
            headers,
            timestamp,
            offset,
            state_key: None,
        }
    }

    /// The value, `None` for a record without one.
    pub fn value_opt(&self) -> Option<&'a [u8]> {
        self.has_value.then_some(self.value)
    }

    pub fn headers(&self) -> HeaderIter<'_> {
        HeaderIter::new(self.headers)
    }
}

fn take_chunk(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let rest = &buf[4..];
    (rest.len() >= len).then(|| rest.split_at(len))
}

pub fn encode_header(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

impl RecordBatch {
    pub fn new(partition: u32) -> Self {
        RecordBatch {
            partition,
            ..Default::default()
        }
    }

    /// An empty batch with room for `records` records of `bytes` value bytes.
    pub fn with_capacity(partition: u32, records: usize, bytes: usize) -> Self {
        RecordBatch {
            partition,
            columns: Columns::with_capacity(records, bytes),
            timestamps: Vec::with_capacity(records),
            offsets: Vec::with_capacity(records),
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// About the memory the batch takes: its data, and 24 bytes a record
    /// for the per-record columns (value end, timestamp, offset).
    pub fn byte_len(&self) -> usize {
        self.columns.data_len() + self.state_keys.bytes.len() + 24 * self.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    pub fn clear(&mut self) {
        self.columns.clear();
        self.timestamps.clear();
        self.offsets.clear();
        self.time_kind = TimeKind::Source;
        self.state_keys.clear();
    }

    pub fn columns(&self) -> &Columns {
        &self.columns
    }

    pub fn timestamps(&self) -> &[i64] {
        &self.timestamps
    }

    pub fn offsets(&self) -> &[i64] {
        &self.offsets
    }

    pub fn time_kind(&self) -> TimeKind {
        self.time_kind
    }

    /// Replace the timestamps with the event times read from the values,
    /// one per record, in record order.
    pub fn set_event_times(&mut self, times: Vec<i64>) {
        assert_eq!(times.len(), self.len(), "one event time per record");
        self.timestamps = times;
        self.time_kind = TimeKind::Event;
    }

    /// An empty batch of the same partition whose timestamps mean what
    /// this one's do, with room for `records` records of `bytes` value
    /// bytes: a part this batch is split into.
    pub fn empty_like(&self, records: usize, bytes: usize) -> RecordBatch {
        RecordBatch {
            time_kind: self.time_kind,
            ..RecordBatch::with_capacity(self.partition, records, bytes)
        }
    }

    /// Whether every record has its state key.
    pub fn has_state_keys(&self) -> bool {
        !self.is_empty() && self.state_keys.len() == self.len()
    }

    /// Every record's state key, when every record has one.
    pub fn state_keys(&self) -> Option<&StateKeys> {
        self.has_state_keys().then_some(&self.state_keys)
    }

    /// Record `i`'s state key, when every record has one.
    pub fn state_key(&self, i: usize) -> Option<&[u8]> {
        (self.state_keys.len() == self.len())
            .then(|| span(&self.state_keys.bytes, &self.state_keys.ends, i))
    }

    /// Set every record's state key, in record order (one per record, or
    /// the column is left out).
    pub fn set_state_keys(&mut self, keys: StateKeys) {
        self.state_keys = keys;
        if self.state_keys.len() != self.len() {
            self.state_keys.clear();
        }
    }

    /// Append a record without headers.
    pub fn push(&mut self, key: Option<&[u8]>, value: &[u8], timestamp: i64, offset: i64) {
        self.push_with_headers(key, value, &[], timestamp, offset);
    }

    /// Append a record; key and header columns materialise on first use.
    pub fn push_with_headers(
        &mut self,
        key: Option<&[u8]>,
        value: &[u8],
        headers: &[HeaderRef<'_>],
        timestamp: i64,
        offset: i64,
    ) {
        self.keep_state_keys(None);
        self.columns.push(key, Some(value), Headers::Pairs(headers));
        self.timestamps.push(timestamp);
        self.offsets.push(offset);
    }

    /// Append a copy of `r`: its value's absence, its encoded headers and
    /// its state key included.
    pub fn push_record(&mut self, r: &RecordRef<'_>) {
        self.keep_state_keys(r.state_key);
        let headers = Headers::Encoded(r.headers);
        self.columns.push(r.key, r.value_opt(), headers);
        self.timestamps.push(r.timestamp);
        self.offsets.push(r.offset);
    }

    /// Keep the state-key column whole only while every record brings one.
    fn keep_state_keys(&mut self, key: Option<&[u8]>) {
        if let Some(k) = key
            && self.state_keys.len() == self.len()
        {
            self.state_keys.push(k);
        }
    }

    /// Record `i`; panics if out of range.
    #[inline]
    pub fn get(&self, i: usize) -> RecordRef<'_> {
        let c = &self.columns;
        RecordRef {
            key: c.key(i),
            value: c.value(i),
            has_value: c.has_value(i),
            headers: c.encoded_headers(i),
            timestamp: self.timestamps[i],
            offset: self.offsets[i],
            state_key: self.state_key(i),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = RecordRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Check every column agrees with the record count and every end offset
    /// is in range, so `get` cannot panic.
    pub fn validate(&self) -> Result<(), EncodingError> {
        let n = self.len();
        self.columns.validate()?;
        check_ends(
            "state-key-ends",
            &self.state_keys.ends,
            self.state_keys.bytes.len(),
        )?;
        check_len("timestamps", self.timestamps.len(), n)?;
        check_len("offsets", self.offsets.len(), n)
    }
}

pub(crate) fn check_headers(data: &[u8], ends: &[u32]) -> Result<(), EncodingError> {
    for i in 0..ends.len() {
        let mut rest = span(data, ends, i);
        while !rest.is_empty() {
            let entry = take_chunk(rest)
                .and_then(|(name, r)| Some((name, take_chunk(r)?)))
                .filter(|(name, _)| std::str::from_utf8(name).is_ok());
            match entry {
                Some((_, (_, r))) => rest = r,
                None => {
                    return Err(malformed(
                        "headers",
                        format!("record {i} has a truncated or non-UTF-8 header entry"),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
