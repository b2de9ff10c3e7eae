//! The engine's batch representation: columnar, one buffer per field, the
//! same layout as the WIT `batch`/`output-batch` records. Batches stay in this
//! form from source to sink, so the hot path never allocates per record.

/// The timestamp of a record that has none (Kafka's `NO_TIMESTAMP`).
pub const NO_TIMESTAMP: i64 = -1;

pub use weir_wire::{EncodingError, span};
pub(crate) use weir_wire::{
    check_ends, check_len, check_optional as check_optional_column, malformed, push_key,
};

/// A record header as a borrowed `(name, value)` pair.
pub type HeaderRef<'a> = (&'a str, &'a [u8]);

/// A batch of input records from one source partition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordBatch {
    pub partition: u32,
    pub values: Vec<u8>,
    pub value_ends: Vec<u32>,
    pub keys: Vec<u8>,
    /// Empty when no record has a key; otherwise one entry per record.
    pub key_ends: Vec<u32>,
    pub has_key: Vec<bool>,
    /// Whether record i has a value: false for a record without one (a
    /// Kafka tombstone), whose `values` span is empty. Empty when every
    /// record has a value.
    pub has_value: Vec<bool>,
    /// Encoded headers: per entry `name-len u32 LE, name, value-len u32 LE, value`.
    pub headers: Vec<u8>,
    /// Empty when no record has headers; otherwise one entry per record.
    pub header_ends: Vec<u32>,
    pub timestamps: Vec<i64>,
    pub offsets: Vec<i64>,
    /// The timestamps are the event times the query reads from the values
    /// (the key exchange read them in the pass that read the keys): the
    /// event-time split does not parse the values again.
    pub event_times_read: bool,
    /// The state key each record was routed by: the key exchange keeps
    /// the keys it read, so a guest can ask for them
    /// (`context.state-keys`) instead of reading them again. In use only
    /// while there is one per record (see [`RecordBatch::state_key`]); a
    /// record added without one leaves the column short for good, so it
    /// never names the wrong record's key.
    pub state_keys: StateKeys,
}

/// Keys back to back, and where each ends (key `i` is
/// `bytes[ends[i-1]..ends[i]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateKeys {
    pub bytes: Vec<u8>,
    pub ends: Vec<u32>,
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
    /// The value, `None` for a record without one.
    pub fn value_opt(&self) -> Option<&'a [u8]> {
        self.has_value.then_some(self.value)
    }

    pub fn headers(&self) -> HeaderIter<'_> {
        HeaderIter(self.headers)
    }
}

/// Iterates encoded headers; stops at the first malformed entry (batches are
/// validated before they are trusted).
pub struct HeaderIter<'a>(&'a [u8]);

impl<'a> HeaderIter<'a> {
    pub fn new(encoded: &'a [u8]) -> Self {
        HeaderIter(encoded)
    }
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = HeaderRef<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let (name, rest) = take_chunk(self.0)?;
        let (value, rest) = take_chunk(rest)?;
        self.0 = rest;
        Some((std::str::from_utf8(name).ok()?, value))
    }
}

fn take_chunk(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let rest = &buf[4..];
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// Append record `n`'s headers, materialising the optional header column
/// the first time a record has headers.
pub(crate) fn push_headers(
    data: &mut Vec<u8>,
    ends: &mut Vec<u32>,
    n: usize,
    headers: &[HeaderRef<'_>],
) {
    if !headers.is_empty() || !ends.is_empty() {
        ends.resize(n, weir_wire::end(data.len()));
        for (name, v) in headers {
            encode_header(data, name, v);
        }
        ends.push(weir_wire::end(data.len()));
    }
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
            values: Vec::with_capacity(bytes),
            value_ends: Vec::with_capacity(records),
            timestamps: Vec::with_capacity(records),
            offsets: Vec::with_capacity(records),
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.value_ends.len()
    }

    /// About the memory the batch takes: its data, and 24 bytes a record
    /// for the per-record columns (value end, timestamp, offset).
    pub fn byte_len(&self) -> usize {
        self.values.len()
            + self.keys.len()
            + self.headers.len()
            + self.state_keys.bytes.len()
            + 24 * self.len()
    }

    pub fn is_empty(&self) -> bool {
        self.value_ends.is_empty()
    }

    pub fn clear(&mut self) {
        self.values.clear();
        self.value_ends.clear();
        self.keys.clear();
        self.key_ends.clear();
        self.has_key.clear();
        self.has_value.clear();
        self.headers.clear();
        self.header_ends.clear();
        self.timestamps.clear();
        self.offsets.clear();
        self.state_keys.clear();
    }

    /// Whether every record has its state key.
    pub fn has_state_keys(&self) -> bool {
        !self.is_empty() && self.state_keys.len() == self.len()
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
        let n = self.len();
        push_key(
            &mut self.keys,
            &mut self.key_ends,
            &mut self.has_key,
            n,
            key,
        );
        push_headers(&mut self.headers, &mut self.header_ends, n, headers);
        self.push_value(Some(value), timestamp, offset);
    }

    /// Append a record whose headers are already in the batch encoding.
    pub fn push_raw(
        &mut self,
        key: Option<&[u8]>,
        value: &[u8],
        encoded_headers: &[u8],
        timestamp: i64,
        offset: i64,
    ) {
        self.push_raw_value(key, Some(value), encoded_headers, timestamp, offset);
    }

    /// Append a copy of `r` (its value's absence included).
    pub fn push_copy(&mut self, r: &RecordRef<'_>) {
        if let Some(k) = r.state_key
            && self.state_keys.len() == self.len()
        {
            self.state_keys.push(k);
        }
        self.push_raw_value(r.key, r.value_opt(), r.headers, r.timestamp, r.offset);
    }

    /// [`Self::push_raw`] for a value that may be absent (`None`: a
    /// tombstone). The `has_value` column materialises on the first one.
    pub fn push_raw_value(
        &mut self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        encoded_headers: &[u8],
        timestamp: i64,
        offset: i64,
    ) {
        let n = self.len();
        push_key(
            &mut self.keys,
            &mut self.key_ends,
            &mut self.has_key,
            n,
            key,
        );
        if !encoded_headers.is_empty() || !self.header_ends.is_empty() {
            self.header_ends
                .resize(n, weir_wire::end(self.headers.len()));
            self.headers.extend_from_slice(encoded_headers);
            self.header_ends.push(weir_wire::end(self.headers.len()));
        }
        self.push_value(value, timestamp, offset);
    }

    /// The columns every record has, and `has_value`, which materialises
    /// on the first record without a value.
    fn push_value(&mut self, value: Option<&[u8]>, timestamp: i64, offset: i64) {
        let n = self.len();
        weir_wire::push_optional(&mut self.has_value, n, true, value.is_some());
        let value = value.unwrap_or_default();
        self.values.extend_from_slice(value);
        self.value_ends.push(weir_wire::end(self.values.len()));
        self.timestamps.push(timestamp);
        self.offsets.push(offset);
    }

    /// Record `i`; panics if out of range.
    #[inline]
    pub fn get(&self, i: usize) -> RecordRef<'_> {
        let key = if self.key_ends.is_empty() || !self.has_key[i] {
            None
        } else {
            Some(span(&self.keys, &self.key_ends, i))
        };
        let headers = if self.header_ends.is_empty() {
            &[][..]
        } else {
            span(&self.headers, &self.header_ends, i)
        };
        RecordRef {
            key,
            value: span(&self.values, &self.value_ends, i),
            has_value: self.has_value.is_empty() || self.has_value[i],
            headers,
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
        check_ends("value-ends", &self.value_ends, self.values.len())?;
        check_optional_column("key-ends", &self.key_ends, n)?;
        check_optional_column("has-key", &self.has_key, self.key_ends.len())?;
        check_optional_column("has-value", &self.has_value, n)?;
        check_ends("key-ends", &self.key_ends, self.keys.len())?;
        check_optional_column("header-ends", &self.header_ends, n)?;
        check_ends("header-ends", &self.header_ends, self.headers.len())?;
        check_headers(&self.headers, &self.header_ends)?;
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
