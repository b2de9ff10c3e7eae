//! Output side of a transform: records are written straight into the
//! columnar output buffers, so emitting a record allocates nothing per record.

use weir_wire::{end, push_key, push_optional, span};

use crate::record::Record;
use crate::wit::{BadRecord, Header as WireHeader, OutputBatch, OutputRecord};

/// Collects the output of one call in the columnar wire form.
///
/// Optional columns (keys, headers, timestamps, origins, routes) stay empty,
/// which the WIT contract reads as "absent / default", until the first record
/// that needs one; then the column is back-filled for earlier records. A plain
/// map therefore costs one value copy and one end offset per record.
#[derive(Default)]
pub struct Emitter {
    values: Vec<u8>,
    value_ends: Vec<u32>,
    has_value: Vec<bool>,
    keys: Vec<u8>,
    key_ends: Vec<u32>,
    has_key: Vec<bool>,
    headers: Vec<WireHeader>,
    header_ends: Vec<u32>,
    /// `(output index, timestamp)` of records with an explicit timestamp;
    /// expanded to a full column by `finish`, which knows the input's.
    explicit_timestamps: Vec<(u32, i64)>,
    /// Materialised once output k does not come from input k.
    origins: Vec<u32>,
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
    timestamps: usize,
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
            ..Default::default()
        }
    }

    /// Empty every column, keeping allocations for the next call.
    pub(crate) fn clear(&mut self) {
        self.rollback(Mark {
            values: 0,
            records: 0,
            keys: 0,
            headers: 0,
            timestamps: 0,
        });
        self.outputs.clear();
        self.rejected.clear();
    }

    pub(crate) fn mark(&self) -> Mark {
        Mark {
            values: self.values.len(),
            records: self.value_ends.len(),
            keys: self.keys.len(),
            headers: self.headers.len(),
            timestamps: self.explicit_timestamps.len(),
        }
    }

    pub(crate) fn rollback(&mut self, m: Mark) {
        self.values.truncate(m.values);
        self.value_ends.truncate(m.records);
        self.has_value.truncate(m.records);
        self.keys.truncate(m.keys);
        self.key_ends.truncate(m.records);
        self.has_key.truncate(m.records);
        self.headers.truncate(m.headers);
        self.header_ends.truncate(m.records);
        self.explicit_timestamps.truncate(m.timestamps);
        self.origins.truncate(m.records);
        self.routes.truncate(m.records);
    }

    pub(crate) fn reject(&mut self, index: u32, reason: String) {
        self.rejected.push(BadRecord { index, reason });
    }

    #[inline(never)]
    fn route(&mut self, name: &str) -> u32 {
        weir_wire::route(&mut self.outputs, name)
    }

    /// Append one output record. The value is written by `write_value`
    /// directly into the output buffer; `None` emits a record without a
    /// value (a tombstone).
    #[inline]
    pub(crate) fn push(
        &mut self,
        origin: &Record<'_>,
        write_value: Option<impl FnOnce(&mut Vec<u8>)>,
        key: KeySpec<'_>,
        headers: Option<&[(String, Vec<u8>)]>,
        timestamp: Option<i64>,
        output: Option<&str>,
    ) {
        let n = self.value_ends.len();
        push_optional(&mut self.has_value, n, true, write_value.is_some());
        if let Some(write) = write_value {
            write(&mut self.values);
        }
        self.value_ends.push(end(self.values.len()));

        let key = match key {
            KeySpec::Inherit => origin.key(),
            KeySpec::Set(k) => k,
        };
        push_key(
            &mut self.keys,
            &mut self.key_ends,
            &mut self.has_key,
            n,
            key,
        );

        let has_headers = match headers {
            None => !origin.headers().is_empty(),
            Some(list) => !list.is_empty(),
        };
        if has_headers || !self.header_ends.is_empty() {
            self.header_ends.resize(n, end(self.headers.len()));
            let header = |(name, value): (&str, &[u8])| WireHeader {
                name: name.to_owned(),
                value: value.to_vec(),
            };
            match headers {
                None => self.headers.extend(origin.headers().iter().map(header)),
                Some(list) => self
                    .headers
                    .extend(list.iter().map(|(n, v)| header((n.as_str(), v.as_slice())))),
            }
            self.header_ends.push(end(self.headers.len()));
        }

        if let Some(ts) = timestamp {
            self.explicit_timestamps.push((n as u32, ts));
        }

        let index = origin.index();
        if !self.origins.is_empty() || index as usize != n {
            if self.origins.is_empty() {
                self.origins.extend(0..n as u32);
            }
            self.origins.push(index);
        }

        let route = match output {
            None => 0,
            Some(name) => self.route(name),
        };
        push_optional(&mut self.routes, n, 0, route);
    }

    /// Origin of output record `i`.
    fn origin(&self, i: usize) -> usize {
        if self.origins.is_empty() {
            i
        } else {
            self.origins[i] as usize
        }
    }

    /// Finish the batch; `input_timestamps` resolves inherited timestamps
    /// when some record set its own.
    pub(crate) fn finish(mut self, input_timestamps: &[i64]) -> OutputBatch {
        let n = self.value_ends.len();
        let input_len = input_timestamps.len();
        if self.origins.is_empty() && n != input_len {
            self.origins.extend(0..n as u32);
        }
        let mut timestamps = Vec::new();
        if !self.explicit_timestamps.is_empty() {
            timestamps = (0..n)
                .map(|i| input_timestamps.get(self.origin(i)).copied().unwrap_or(0))
                .collect();
            for &(i, ts) in &self.explicit_timestamps {
                timestamps[i as usize] = ts;
            }
        }
        OutputBatch {
            values: self.values,
            value_ends: self.value_ends,
            has_value: self.has_value,
            keys: self.keys,
            key_ends: self.key_ends,
            has_key: self.has_key,
            headers: self.headers,
            header_ends: self.header_ends,
            timestamps,
            origins: self.origins,
            outputs: self.outputs,
            routes: self.routes,
            rejected: self.rejected,
        }
    }

    /// The output as a list of records, for the per-record call.
    pub(crate) fn to_records(&self) -> Vec<OutputRecord> {
        let mut explicit = self.explicit_timestamps.iter().peekable();
        (0..self.value_ends.len())
            .map(|i| {
                let key = (!self.key_ends.is_empty() && self.has_key[i])
                    .then(|| span(&self.keys, &self.key_ends, i).to_vec());
                let headers = if self.header_ends.is_empty() {
                    Vec::new()
                } else {
                    span(&self.headers, &self.header_ends, i).to_vec()
                };
                let has_value = weir_wire::optional(&self.has_value, i, true);
                let route = self.routes.get(i).copied().unwrap_or(0);
                let timestamp = explicit.next_if(|(k, _)| *k as usize == i).map(|(_, t)| *t);
                OutputRecord {
                    output: (route != 0).then(|| self.outputs[route as usize - 1].clone()),
                    key,
                    value: has_value.then(|| span(&self.values, &self.value_ends, i).to_vec()),
                    headers,
                    timestamp,
                }
            })
            .collect()
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
            .push(&input, Some(write), KeySpec::Inherit, None, None, None);
    }

    /// Emit `value` to the named output `output`.
    pub fn emit_to(&mut self, output: &str, value: impl AsRef<[u8]>) {
        let input = self.input;
        let v = value.as_ref();
        self.emitter.push(
            &input,
            Some(|buf: &mut Vec<u8>| buf.extend_from_slice(v)),
            KeySpec::Inherit,
            None,
            None,
            Some(output),
        );
    }

    /// Pass the input record through unchanged (a record without a value
    /// stays without one).
    pub fn forward(&mut self) {
        self.forward_inner(None);
    }

    /// Pass the input record through unchanged to the named output.
    pub fn forward_to(&mut self, output: &str) {
        self.forward_inner(Some(output));
    }

    fn forward_inner(&mut self, output: Option<&str>) {
        let input = self.input;
        let write = input
            .value_opt()
            .map(|v| move |buf: &mut Vec<u8>| buf.extend_from_slice(v));
        self.emitter
            .push(&input, write, KeySpec::Inherit, None, None, output);
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
        self.emit_opt(Some(value.as_ref()));
    }

    /// Emit a record without a value: a tombstone, which deletes its key
    /// from a compacted Kafka topic.
    pub fn emit_tombstone(self) {
        self.emit_opt(None);
    }

    fn emit_opt(self, value: Option<&[u8]>) {
        let input = self.out.input;
        let key = match &self.key {
            None => KeySpec::Inherit,
            Some(k) => KeySpec::Set(k.as_deref()),
        };
        self.out.emitter.push(
            &input,
            value.map(|v| move |buf: &mut Vec<u8>| buf.extend_from_slice(v)),
            key,
            self.headers.as_deref(),
            self.timestamp,
            self.output.as_deref(),
        );
    }
}
