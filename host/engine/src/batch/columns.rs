//! The record fields an input batch and an output batch share, in one
//! columnar set: the value, key and header buffers with their ends and
//! presence flags, laid out as the WIT `batch`/`output-batch` records lay
//! them out. Both batch kinds hold a [`Columns`], so a record moves from one
//! to the other with buffer copies and no field is written twice.
//!
//! Fields are private: optional columns (keys, headers, `has-value`) must
//! materialise together and stay as long as the record count, and only the
//! methods here keep that true. The runtime, which lends the buffers to a
//! guest and takes a guest's buffers back, goes through [`ColumnSlices`]
//! (borrowed, read-only) and [`ColumnParts`] (owned, checked by the batch's
//! `validate` before anything reads it).

use super::{EncodingError, HeaderRef, check_headers, take_chunk};
use weir_wire::{check_ends, check_len, check_optional, push_key, span};

/// Value, key and header columns of a batch's records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Columns {
    values: Vec<u8>,
    value_ends: Vec<u32>,
    /// Empty while every record has a value; false for a record without
    /// one (a Kafka tombstone), whose value span is empty.
    has_value: Vec<bool>,
    keys: Vec<u8>,
    /// Empty while no record has a key; otherwise one entry per record.
    key_ends: Vec<u32>,
    has_key: Vec<bool>,
    /// Per entry `name-len u32 LE, name, value-len u32 LE, value`.
    headers: Vec<u8>,
    /// Empty while no record has headers; otherwise one entry per record.
    header_ends: Vec<u32>,
}

/// A record's headers as a caller has them.
#[derive(Debug, Clone, Copy)]
pub enum Headers<'a> {
    /// Name and value pairs, encoded as they are appended.
    Pairs(&'a [HeaderRef<'a>]),
    /// Already in the batch encoding (a copy from another batch or a log).
    Encoded(&'a [u8]),
}

/// The columns borrowed whole, for lending them to a guest without a copy.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSlices<'a> {
    pub values: &'a [u8],
    pub value_ends: &'a [u32],
    pub has_value: &'a [bool],
    pub keys: &'a [u8],
    pub key_ends: &'a [u32],
    pub has_key: &'a [bool],
    pub headers: &'a [u8],
    pub header_ends: &'a [u32],
}

/// The columns as owned buffers, as a guest returns them; a batch built
/// from them is validated before it is read.
#[derive(Debug, Clone, Default)]
pub struct ColumnParts {
    pub values: Vec<u8>,
    pub value_ends: Vec<u32>,
    pub has_value: Vec<bool>,
    pub keys: Vec<u8>,
    pub key_ends: Vec<u32>,
    pub has_key: Vec<bool>,
    pub headers: Vec<u8>,
    pub header_ends: Vec<u32>,
}

impl Columns {
    pub fn with_capacity(records: usize, bytes: usize) -> Columns {
        Columns {
            values: Vec::with_capacity(bytes),
            value_ends: Vec::with_capacity(records),
            ..Default::default()
        }
    }

    /// Columns from owned buffers, unchecked until `validate`.
    pub fn from_parts(p: ColumnParts) -> Columns {
        Columns {
            values: p.values,
            value_ends: p.value_ends,
            has_value: p.has_value,
            keys: p.keys,
            key_ends: p.key_ends,
            has_key: p.has_key,
            headers: p.headers,
            header_ends: p.header_ends,
        }
    }

    pub fn slices(&self) -> ColumnSlices<'_> {
        ColumnSlices {
            values: &self.values,
            value_ends: &self.value_ends,
            has_value: &self.has_value,
            keys: &self.keys,
            key_ends: &self.key_ends,
            has_key: &self.has_key,
            headers: &self.headers,
            header_ends: &self.header_ends,
        }
    }

    pub fn len(&self) -> usize {
        self.value_ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.value_ends.is_empty()
    }

    /// Bytes of value, key and header data.
    pub fn data_len(&self) -> usize {
        self.values.len() + self.keys.len() + self.headers.len()
    }

    /// Whether any record has headers (the header column exists).
    pub fn has_headers(&self) -> bool {
        !self.header_ends.is_empty()
    }

    pub fn clear(&mut self) {
        self.values.clear();
        self.value_ends.clear();
        self.has_value.clear();
        self.keys.clear();
        self.key_ends.clear();
        self.has_key.clear();
        self.headers.clear();
        self.header_ends.clear();
    }

    /// Append a record; the optional columns materialise on first use.
    pub fn push(&mut self, key: Option<&[u8]>, value: Option<&[u8]>, headers: Headers<'_>) {
        self.push_fields(key, value.is_some(), headers);
        self.values.extend_from_slice(value.unwrap_or_default());
        self.value_ends.push(weir_wire::end(self.values.len()));
    }

    /// Append a record without key or headers whose value `write` appends
    /// to the value buffer in place: a native transform's output without
    /// a copy through a scratch buffer.
    #[inline]
    pub fn push_value_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        self.push_fields(None, true, Headers::Encoded(&[]));
        write(&mut self.values);
        self.value_ends.push(weir_wire::end(self.values.len()));
    }

    /// The next record's key, headers and `has-value` entries: the columns
    /// other than the value, each materialising on its first non-default.
    #[inline]
    fn push_fields(&mut self, key: Option<&[u8]>, has_value: bool, headers: Headers<'_>) {
        let n = self.len();
        push_key(
            &mut self.keys,
            &mut self.key_ends,
            &mut self.has_key,
            n,
            key,
        );
        let any = match headers {
            Headers::Pairs(h) => !h.is_empty(),
            Headers::Encoded(h) => !h.is_empty(),
        };
        if any || !self.header_ends.is_empty() {
            self.header_ends
                .resize(n, weir_wire::end(self.headers.len()));
            match headers {
                Headers::Pairs(h) => {
                    for (name, v) in h {
                        super::encode_header(&mut self.headers, name, v);
                    }
                }
                Headers::Encoded(h) => self.headers.extend_from_slice(h),
            }
            self.header_ends.push(weir_wire::end(self.headers.len()));
        }
        weir_wire::push_optional(&mut self.has_value, n, true, has_value);
    }

    /// Room for `records` more records of `bytes` more value bytes.
    pub fn reserve(&mut self, records: usize, bytes: usize) {
        self.values.reserve(bytes);
        self.value_ends.reserve(records);
    }

    #[inline]
    pub fn key(&self, i: usize) -> Option<&[u8]> {
        if self.key_ends.is_empty() || !self.has_key[i] {
            None
        } else {
            Some(span(&self.keys, &self.key_ends, i))
        }
    }

    /// Record `i`'s value, empty when it has none (see [`Self::has_value`]).
    #[inline]
    pub fn value(&self, i: usize) -> &[u8] {
        span(&self.values, &self.value_ends, i)
    }

    #[inline]
    pub fn has_value(&self, i: usize) -> bool {
        self.has_value.is_empty() || self.has_value[i]
    }

    /// Record `i`'s headers in the batch encoding.
    #[inline]
    pub fn encoded_headers(&self, i: usize) -> &[u8] {
        if self.header_ends.is_empty() {
            &[]
        } else {
            span(&self.headers, &self.header_ends, i)
        }
    }

    /// Check every column agrees with the record count and every end is
    /// in range, so no accessor can panic.
    pub fn validate(&self) -> Result<(), EncodingError> {
        let n = self.len();
        check_ends("value-ends", &self.value_ends, self.values.len())?;
        check_optional("has-value", &self.has_value, n)?;
        check_optional("key-ends", &self.key_ends, n)?;
        check_len("has-key", self.has_key.len(), self.key_ends.len())?;
        check_ends("key-ends", &self.key_ends, self.keys.len())?;
        check_optional("header-ends", &self.header_ends, n)?;
        check_ends("header-ends", &self.header_ends, self.headers.len())?;
        check_headers(&self.headers, &self.header_ends)
    }

    #[cfg(test)]
    pub(crate) fn parts_mut(&mut self) -> PartsMut<'_> {
        PartsMut {
            value_ends: &mut self.value_ends,
            has_value: &mut self.has_value,
            headers: &mut self.headers,
            header_ends: &mut self.header_ends,
        }
    }
}

/// Mutable access for tests that break a batch on purpose.
#[cfg(test)]
pub(crate) struct PartsMut<'a> {
    pub value_ends: &'a mut Vec<u32>,
    pub has_value: &'a mut Vec<bool>,
    pub headers: &'a mut Vec<u8>,
    pub header_ends: &'a mut Vec<u32>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Columns {
        let mut c = Columns::default();
        c.push(None, Some(b"a"), Headers::Pairs(&[]));
        c.push(Some(b"k"), None, Headers::Pairs(&[("h", b"v")]));
        c
    }

    #[test]
    fn a_value_written_in_place_keeps_the_optional_columns_whole() {
        let mut direct = sample();
        let mut in_place = sample();
        direct.push(None, Some(b"xy"), Headers::Encoded(&[]));
        in_place.push_value_with(|values| values.extend_from_slice(b"xy"));
        in_place.validate().unwrap();
        assert_eq!(in_place, direct);
    }

    #[test]
    fn a_has_key_column_shorter_than_its_key_ends_is_malformed() {
        let mut parts = ColumnParts {
            values: b"ab".to_vec(),
            value_ends: vec![1, 2],
            keys: b"k".to_vec(),
            key_ends: vec![1, 1],
            ..Default::default()
        };
        let err = Columns::from_parts(parts.clone()).validate().unwrap_err();
        assert_eq!(err.to_string(), "has-key: has 0 entries, expected 2");
        parts.has_key = vec![true, false];
        Columns::from_parts(parts).validate().unwrap();
    }
}
