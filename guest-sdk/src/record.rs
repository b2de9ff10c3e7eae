//! Borrowed views over input records, so a transform reads keys, values and
//! headers straight out of the batch buffers without copying them.

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
    pub(crate) value: &'a [u8],
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
            headers: Headers::Encoded(&[]),
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

    /// Headers given as an encoded blob (see the WIT `batch` docs).
    pub fn with_encoded_headers(mut self, encoded: &'a [u8]) -> Self {
        self.headers = Headers::Encoded(encoded);
        self
    }

    /// Index of this record in its input batch.
    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn key(&self) -> Option<&'a [u8]> {
        self.key
    }

    pub fn value(&self) -> &'a [u8] {
        self.value
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

/// The headers of one record, either still encoded (batch path) or as the
/// list the per-record call received.
#[derive(Clone, Copy, Debug)]
pub enum Headers<'a> {
    Encoded(&'a [u8]),
    List(&'a [WireHeader]),
}

impl<'a> Headers<'a> {
    pub fn iter(&self) -> HeaderIter<'a> {
        match *self {
            Headers::Encoded(buf) => HeaderIter::Encoded(buf),
            Headers::List(list) => HeaderIter::List(list.iter()),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Headers::Encoded(buf) => buf.is_empty(),
            Headers::List(list) => list.is_empty(),
        }
    }
}

/// Iterates `(name, value)` pairs. A malformed encoding ends the iteration;
/// the host validates header encodings before a batch reaches the guest.
pub enum HeaderIter<'a> {
    Encoded(&'a [u8]),
    List(std::slice::Iter<'a, WireHeader>),
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HeaderIter::List(it) => it.next().map(|h| (h.name.as_str(), h.value.as_slice())),
            HeaderIter::Encoded(buf) => {
                let (name, rest) = take_chunk(buf)?;
                let (value, rest) = take_chunk(rest)?;
                *buf = rest;
                Some((std::str::from_utf8(name).ok()?, value))
            }
        }
    }
}

fn take_chunk(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let rest = &buf[4..];
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// Append one header entry in the batch encoding.
pub(crate) fn encode_header(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
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
            headers: Headers::Encoded(headers),
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

#[inline]
pub(crate) fn span<'a>(data: &'a [u8], ends: &[u32], i: usize) -> &'a [u8] {
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &data[start..ends[i] as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_through_the_encoding() {
        let mut buf = Vec::new();
        encode_header(&mut buf, "a", b"1");
        encode_header(&mut buf, "trace-id", b"");
        let got: Vec<_> = Headers::Encoded(&buf).iter().collect();
        assert_eq!(got, vec![("a", &b"1"[..]), ("trace-id", &b""[..])]);
    }

    #[test]
    fn truncated_header_encoding_stops_iteration() {
        let mut buf = Vec::new();
        encode_header(&mut buf, "a", b"12345");
        buf.truncate(buf.len() - 2);
        assert_eq!(Headers::Encoded(&buf).iter().count(), 0);
    }
}
