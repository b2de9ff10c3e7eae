//! Output side of a transform: records are written straight into the
//! columnar output buffers, so emitting a record allocates nothing per record.

use crate::record::{Record, encode_header, span};
use crate::wit::{BadRecord, Header as WireHeader, OutputBatch, OutputRecord};

/// Collects the output of one call in the columnar wire form.
///
/// Every column is filled for every record; columns that turn out to carry
/// nothing (no keys, no headers, default timestamps, default routes, one
/// output per input) are sent empty, which the WIT contract reads as "absent".
#[derive(Default)]
pub struct Emitter {
    values: Vec<u8>,
    value_ends: Vec<u32>,
    keys: Vec<u8>,
    key_ends: Vec<u32>,
    has_key: Vec<bool>,
    any_key: bool,
    headers: Vec<u8>,
    header_ends: Vec<u32>,
    timestamps: Vec<i64>,
    any_explicit_timestamp: bool,
    origins: Vec<u32>,
    one_to_one: bool,
    outputs: Vec<String>,
    routes: Vec<u32>,
    rejected: Vec<BadRecord>,
}

/// Lengths of every column, to roll back a record's partial output when the
/// transform refuses that record.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    values: usize,
    records: usize,
    keys: usize,
    headers: usize,
}

/// What key an emitted record carries.
pub(crate) enum KeySpec<'a> {
    Inherit,
    Set(Option<&'a [u8]>),
}

impl Emitter {
    /// An emitter sized for an input of `records` records and `bytes` value bytes.
    pub(crate) fn with_capacity(records: usize, bytes: usize) -> Self {
        Emitter {
            values: Vec::with_capacity(bytes),
            value_ends: Vec::with_capacity(records),
            key_ends: Vec::with_capacity(records),
            has_key: Vec::with_capacity(records),
            header_ends: Vec::with_capacity(records),
            timestamps: Vec::with_capacity(records),
            origins: Vec::with_capacity(records),
            routes: Vec::with_capacity(records),
            one_to_one: true,
            ..Default::default()
        }
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark {
            values: self.values.len(),
            records: self.value_ends.len(),
            keys: self.keys.len(),
            headers: self.headers.len(),
        }
    }

    pub(crate) fn rollback(&mut self, m: Mark) {
        self.values.truncate(m.values);
        self.value_ends.truncate(m.records);
        self.keys.truncate(m.keys);
        self.key_ends.truncate(m.records);
        self.has_key.truncate(m.records);
        self.headers.truncate(m.headers);
        self.header_ends.truncate(m.records);
        self.timestamps.truncate(m.records);
        self.origins.truncate(m.records);
        self.routes.truncate(m.records);
    }

    pub(crate) fn reject(&mut self, index: u32, reason: String) {
        self.rejected.push(BadRecord { index, reason });
    }

    fn route(&mut self, output: Option<&str>) -> u32 {
        let Some(name) = output else { return 0 };
        match self.outputs.iter().position(|o| o == name) {
            Some(i) => i as u32 + 1,
            None => {
                self.outputs.push(name.to_owned());
                self.outputs.len() as u32
            }
        }
    }

    /// Append one output record. The value is written by `write_value`
    /// directly into the output buffer.
    #[inline]
    pub(crate) fn push(
        &mut self,
        origin: &Record<'_>,
        write_value: impl FnOnce(&mut Vec<u8>),
        key: KeySpec<'_>,
        headers: Option<&[(String, Vec<u8>)]>,
        timestamp: Option<i64>,
        output: Option<&str>,
    ) {
        write_value(&mut self.values);
        self.value_ends.push(self.values.len() as u32);

        let key = match key {
            KeySpec::Inherit => origin.key(),
            KeySpec::Set(k) => k,
        };
        if let Some(k) = key {
            self.keys.extend_from_slice(k);
            self.any_key = true;
        }
        self.key_ends.push(self.keys.len() as u32);
        self.has_key.push(key.is_some());

        match headers {
            None => {
                for (name, value) in origin.headers().iter() {
                    encode_header(&mut self.headers, name, value);
                }
            }
            Some(list) => {
                for (name, value) in list {
                    encode_header(&mut self.headers, name, value);
                }
            }
        }
        self.header_ends.push(self.headers.len() as u32);

        self.any_explicit_timestamp |= timestamp.is_some();
        self.timestamps
            .push(timestamp.unwrap_or_else(|| origin.timestamp()));

        self.one_to_one &= origin.index() as usize == self.origins.len();
        self.origins.push(origin.index());
        let route = self.route(output);
        self.routes.push(route);
    }

    /// Finish the batch for an input of `input_len` records.
    pub(crate) fn finish(mut self, input_len: usize) -> OutputBatch {
        let n = self.value_ends.len();
        if !self.any_key {
            self.key_ends.clear();
            self.has_key.clear();
        }
        if self.headers.is_empty() {
            self.header_ends.clear();
        }
        if !self.any_explicit_timestamp {
            self.timestamps.clear();
        }
        if self.one_to_one && n == input_len {
            self.origins.clear();
        }
        if self.outputs.is_empty() {
            self.routes.clear();
        }
        OutputBatch {
            values: self.values,
            value_ends: self.value_ends,
            keys: self.keys,
            key_ends: self.key_ends,
            has_key: self.has_key,
            headers: self.headers,
            header_ends: self.header_ends,
            timestamps: self.timestamps,
            origins: self.origins,
            outputs: self.outputs,
            routes: self.routes,
            rejected: self.rejected,
        }
    }

    /// Finish as a list of records, for the per-record call.
    pub(crate) fn into_records(self) -> Vec<OutputRecord> {
        let mut out = Vec::with_capacity(self.value_ends.len());
        for i in 0..self.value_ends.len() {
            let key = self
                .has_key
                .get(i)
                .copied()
                .unwrap_or(false)
                .then(|| span(&self.keys, &self.key_ends, i).to_vec());
            let header_bytes = span(&self.headers, &self.header_ends, i);
            let headers = crate::record::Headers::Encoded(header_bytes)
                .iter()
                .map(|(name, value)| WireHeader {
                    name: name.to_owned(),
                    value: value.to_vec(),
                })
                .collect();
            let route = self.routes[i];
            out.push(OutputRecord {
                output: (route != 0).then(|| self.outputs[route as usize - 1].clone()),
                key,
                value: span(&self.values, &self.value_ends, i).to_vec(),
                headers,
                timestamp: self
                    .any_explicit_timestamp
                    .then(|| self.timestamps[i]),
            });
        }
        out
    }
}

/// Where a transform writes the output of one input record.
///
/// Records emitted with [`Output::emit`] keep the input's key, headers and
/// timestamp; use [`Output::build`] to set them.
pub struct Output<'e, 'r> {
    pub(crate) emitter: &'e mut Emitter,
    pub(crate) input: Record<'r>,
}

impl<'e, 'r> Output<'e, 'r> {
    pub(crate) fn new(emitter: &'e mut Emitter, input: Record<'r>) -> Self {
        Output { emitter, input }
    }

    /// The record this output belongs to.
    pub fn input(&self) -> &Record<'r> {
        &self.input
    }

    /// Emit `value` to the default output, keeping key, headers and timestamp.
    pub fn emit(&mut self, value: impl AsRef<[u8]>) {
        let v = value.as_ref();
        self.emit_with(|buf| buf.extend_from_slice(v));
    }

    /// Emit a value written in place by `write` (no intermediate buffer).
    #[inline]
    pub fn emit_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let input = self.input;
        self.emitter
            .push(&input, write, KeySpec::Inherit, None, None, None);
    }

    /// Emit `value` to the named output `output`.
    pub fn emit_to(&mut self, output: &str, value: impl AsRef<[u8]>) {
        let input = self.input;
        let v = value.as_ref();
        self.emitter.push(
            &input,
            |buf| buf.extend_from_slice(v),
            KeySpec::Inherit,
            None,
            None,
            Some(output),
        );
    }

    /// Pass the input record through unchanged.
    pub fn forward(&mut self) {
        let v = self.input.value();
        self.emit(v);
    }

    /// Pass the input record through unchanged to the named output.
    pub fn forward_to(&mut self, output: &str) {
        let v = self.input.value();
        self.emit_to(output, v);
    }

    /// Start a record whose key, headers, timestamp and output can be set.
    pub fn build(&mut self) -> RecordBuilder<'_, 'e, 'r> {
        RecordBuilder {
            out: self,
            key: None,
            headers: None,
            timestamp: None,
            output: None,
        }
    }
}

/// A record under construction; nothing is emitted until [`RecordBuilder::emit`].
#[must_use = "a built record is only emitted by calling .emit(value)"]
pub struct RecordBuilder<'o, 'e, 'r> {
    out: &'o mut Output<'e, 'r>,
    key: Option<Option<Vec<u8>>>,
    headers: Option<Vec<(String, Vec<u8>)>>,
    timestamp: Option<i64>,
    output: Option<String>,
}

impl RecordBuilder<'_, '_, '_> {
    /// Set the key; `None` emits a record without a key.
    pub fn key(mut self, key: Option<impl AsRef<[u8]>>) -> Self {
        self.key = Some(key.map(|k| k.as_ref().to_vec()));
        self
    }

    /// Add a header (the first call replaces the inherited headers).
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .get_or_insert_with(Vec::new)
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Drop the inherited headers.
    pub fn no_headers(mut self) -> Self {
        self.headers = Some(Vec::new());
        self
    }

    pub fn timestamp(mut self, millis: i64) -> Self {
        self.timestamp = Some(millis);
        self
    }

    /// Send the record to the named output instead of the default one.
    pub fn to(mut self, output: &str) -> Self {
        self.output = Some(output.to_owned());
        self
    }

    pub fn emit(self, value: impl AsRef<[u8]>) {
        let input = self.out.input;
        let v = value.as_ref();
        let key = match &self.key {
            None => KeySpec::Inherit,
            Some(k) => KeySpec::Set(k.as_deref()),
        };
        self.out.emitter.push(
            &input,
            |buf| buf.extend_from_slice(v),
            key,
            self.headers.as_deref(),
            self.timestamp,
            self.output.as_deref(),
        );
    }
}
