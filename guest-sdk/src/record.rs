//! Borrowed views over input records, so a transform reads keys, values and
//! headers straight out of the batch buffers without copying them.

pub(crate) use weir_wire::span;

use crate::wit::{Batch as WireBatch, Header as WireHeader};

/// Where a record came from in its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub partition: u32,
    pub offset: i64,
}

/// One input record, borrowed from the batch it arrived in.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub(crate) index: u32,
    pub(crate) key: Option<&'a [u8]>,
    /// Empty when the record has no value (see `has_value`).
    pub(crate) value: &'a [u8],
    pub(crate) has_value: bool,
    pub(crate) headers: Headers<'a>,
    pub(crate) timestamp: i64,
    pub(crate) position: Position,
}

impl<'a> Record<'a> {
    /// A record for native unit tests and for the SDK's own adapters.
    pub fn new(value: &'a [u8]) -> Self {
        Record {
            index: 0,
            key: None,
            value,
            has_value: true,
            headers: Headers(&[]),
            timestamp: 0,
            position: Position {
                partition: 0,
                offset: 0,
            },
        }
    }

    pub fn with_key(mut self, key: Option<&'a [u8]>) -> Self {
        self.key = key;
        self
    }

    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    pub fn with_position(mut self, partition: u32, offset: i64) -> Self {
        self.position = Position { partition, offset };
        self
    }

    pub fn with_headers(mut self, headers: &'a [WireHeader]) -> Self {
        self.headers = Headers(headers);
        self
    }

    /// This record without a value (a tombstone), for tests.
    pub fn without_value(mut self) -> Self {
        self.value = &[];
        self.has_value = false;
        self
    }

    /// Index of this record in its input batch.
    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn key(&self) -> Option<&'a [u8]> {
        self.key
    }

    /// The value; empty for a record without one (see [`Record::has_value`]).
    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// False for a record without a value: a Kafka tombstone, which says
    /// "delete this key" to a compacted topic.
    pub fn has_value(&self) -> bool {
        self.has_value
    }

    /// The value, `None` for a record without one.
    pub fn value_opt(&self) -> Option<&'a [u8]> {
        self.has_value.then_some(self.value)
    }

    /// The value as UTF-8, or a bad-record error saying it is not.
    pub fn value_str(&self) -> Result<&'a str, crate::RecordError> {
        std::str::from_utf8(self.value)
            .map_err(|e| crate::RecordError::bad(format!("value is not UTF-8: {e}")))
    }

    /// Event time in milliseconds since the Unix epoch.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    pub fn position(&self) -> Position {
        self.position
    }

    pub fn headers(&self) -> Headers<'a> {
        self.headers
    }

    /// The first header named `name`, if any.
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }
}

/// The headers of one record, in order.
#[derive(Clone, Copy, Debug)]
pub struct Headers<'a>(pub(crate) &'a [WireHeader]);

impl<'a> Headers<'a> {
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter(self.0.iter())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Iterates a record's headers as `(name, value)` pairs.
pub struct HeaderIter<'a>(std::slice::Iter<'a, WireHeader>);

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|h| (h.name.as_str(), h.value.as_slice()))
    }
}

/// A borrowed view of a whole input batch.
pub struct Batch<'a> {
    pub(crate) wire: &'a WireBatch,
}

impl<'a> Batch<'a> {
    pub fn len(&self) -> usize {
        self.wire.value_ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wire.value_ends.is_empty()
    }

    pub fn partition(&self) -> u32 {
        self.wire.partition
    }

    /// The raw columnar encoding, for transforms that work on whole columns.
    pub fn wire(&self) -> &'a WireBatch {
        self.wire
    }

    /// Record `i`; panics if `i >= len()`.
    #[inline]
    pub fn get(&self, i: usize) -> Record<'a> {
        let w = self.wire;
        let value = span(&w.values, &w.value_ends, i);
        let key = if w.key_ends.is_empty() || !w.has_key[i] {
            None
        } else {
            Some(span(&w.keys, &w.key_ends, i))
        };
        let headers = if w.header_ends.is_empty() {
            &[][..]
        } else {
            span(&w.headers, &w.header_ends, i)
        };
        Record {
            index: i as u32,
            key,
            value,
            has_value: weir_wire::optional(&w.has_value, i, true),
            headers: Headers(headers),
            timestamp: w.timestamps.get(i).copied().unwrap_or(0),
            position: Position {
                partition: w.partition,
                offset: w.offsets.get(i).copied().unwrap_or(0),
            },
        }
    }

    pub fn records(&self) -> impl Iterator<Item = Record<'a>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}
