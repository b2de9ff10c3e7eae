//! What a transform returns for one input batch: output records in columnar
//! form (same layout as the WIT `output-batch`) plus the refused records.

use super::batch::{
    ColumnParts, Columns, EncodingError, HeaderRef, Headers, RecordBatch, check_len,
    check_optional_column, malformed,
};

mod rejection;
pub use rejection::{RejectKind, Rejected, Rejections};

/// Input batches, each with what the transform made of it: a batch's (or
/// epoch's) output as the sinks take it.
pub type Parts = Vec<(RecordBatch, TransformOutput)>;

/// Output records of one batch. Optional columns follow the WIT rules: an
/// empty `timestamps` keeps the input timestamps, an empty `origins` means one
/// output per input in order, an empty `routes` sends all to the default output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutputBatch {
    columns: Columns,
    timestamps: Vec<i64>,
    origins: Vec<u32>,
    outputs: Vec<String>,
    routes: Vec<u32>,
}

/// An output batch as owned buffers, as a guest returns it; validated
/// (`TransformOutput::validate`) before anything reads it.
#[derive(Debug, Clone, Default)]
pub struct OutputParts {
    pub columns: ColumnParts,
    pub timestamps: Vec<i64>,
    pub origins: Vec<u32>,
    pub outputs: Vec<String>,
    pub routes: Vec<u32>,
}

/// The result of processing one batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransformOutput {
    pub batch: OutputBatch,
    pub rejected: Vec<Rejected>,
}

/// One output record, borrowed; timestamps and origins already resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputRef<'a> {
    /// `None` for the default output.
    pub output: Option<&'a str>,
    pub key: Option<&'a [u8]>,
    /// Empty when the output has no value (see `has_value`).
    pub value: &'a [u8],
    pub has_value: bool,
    pub headers: &'a [u8],
    pub timestamp: i64,
    /// Index of the input record it came from.
    pub origin: u32,
}

impl<'a> OutputRef<'a> {
    /// The value, `None` for an output without one.
    pub fn value_opt(&self) -> Option<&'a [u8]> {
        self.has_value.then_some(self.value)
    }

    pub fn headers(&self) -> super::batch::HeaderIter<'_> {
        super::batch::HeaderIter::new(self.headers)
    }
}

impl OutputBatch {
    /// A batch from owned buffers, unchecked until `validate`.
    pub fn from_parts(p: OutputParts) -> OutputBatch {
        OutputBatch {
            columns: Columns::from_parts(p.columns),
            timestamps: p.timestamps,
            origins: p.origins,
            outputs: p.outputs,
            routes: p.routes,
        }
    }

    pub fn len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    pub fn columns(&self) -> &Columns {
        &self.columns
    }

    /// Which input each output came from; empty for one output per input,
    /// in order.
    pub fn origins(&self) -> &[u32] {
        &self.origins
    }

    /// The named outputs the records are routed to (a route `r > 0` names
    /// `outputs[r - 1]`).
    pub fn output_names(&self) -> &[String] {
        &self.outputs
    }

    /// Whether any record goes to the default output.
    pub fn uses_default_output(&self) -> bool {
        (self.routes.is_empty() && !self.is_empty()) || self.routes.contains(&0)
    }

    /// Make this batch each record of `input` as its own output, unchanged
    /// (a pipeline without a transform): the input's columns, with
    /// timestamps and origins inherited.
    pub fn pass_through(&mut self, input: &RecordBatch) {
        self.columns.clone_from(input.columns());
        self.timestamps.clear();
        self.origins.clear();
        self.outputs.clear();
        self.routes.clear();
    }

    /// Append the output of the next input record, one per input in order
    /// (origins and timestamps stay inherited), its value written in place
    /// by `write`. Mixed with [`Self::push`] the batch fails `validate`.
    #[inline]
    pub fn push_mapped(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        debug_assert!(self.origins.is_empty(), "push_mapped after push");
        self.columns.push_value_with(write);
    }

    /// Room for `records` more outputs of `bytes` more value bytes.
    pub fn reserve(&mut self, records: usize, bytes: usize) {
        self.columns.reserve(records, bytes);
    }

    /// Append a record in full form (materialising optional columns as
    /// needed); used by native transforms and the per-record call path.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        origin: u32,
        output: Option<&str>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
        timestamp: i64,
    ) {
        let n = self.len();
        self.columns.push(key, value, Headers::Pairs(headers));
        self.timestamps.push(timestamp);
        self.origins.push(origin);
        let route = output.map_or(0, |name| weir_wire::route(&mut self.outputs, name));
        weir_wire::push_optional(&mut self.routes, n, 0, route);
    }

    /// Output record `i`, resolving inherited fields from `input`.
    #[inline]
    pub fn get<'a>(&'a self, input: &'a RecordBatch, i: usize) -> OutputRef<'a> {
        let origin = if self.origins.is_empty() {
            i as u32
        } else {
            self.origins[i]
        };
        let route = self.routes.get(i).copied().unwrap_or(0);
        let c = &self.columns;
        OutputRef {
            output: (route != 0).then(|| self.outputs[route as usize - 1].as_str()),
            key: c.key(i),
            value: c.value(i),
            has_value: c.has_value(i),
            headers: c.encoded_headers(i),
            timestamp: match self.timestamps.get(i) {
                Some(t) => *t,
                None => input.timestamps()[origin as usize],
            },
            origin,
        }
    }

    pub fn iter<'a>(&'a self, input: &'a RecordBatch) -> impl Iterator<Item = OutputRef<'a>> + 'a {
        (0..self.len()).map(move |i| self.get(input, i))
    }

    /// Check the encoding against the input it answers, so nothing a guest
    /// returns can make `get` panic or point at a record that does not exist.
    pub fn validate(&self, input_len: usize) -> Result<(), EncodingError> {
        let n = self.len();
        self.columns.validate()?;
        check_optional_column("timestamps", &self.timestamps, n)?;
        if self.origins.is_empty() {
            // Empty origins: one output per input, or no output at all.
            if n != input_len && n != 0 {
                return Err(malformed(
                    "origins",
                    format!(
                        "is empty (one output per input) but there are {n} outputs for {input_len} inputs"
                    ),
                ));
            }
        } else {
            check_len("origins", self.origins.len(), n)?;
            let mut prev = 0;
            for (i, &o) in self.origins.iter().enumerate() {
                if o as usize >= input_len || o < prev {
                    return Err(malformed(
                        "origins",
                        format!(
                            "entry {i} ({o}) is out of order or not below the input count {input_len}"
                        ),
                    ));
                }
                prev = o;
            }
        }
        check_optional_column("routes", &self.routes, n)?;
        if let Some((i, r)) = self
            .routes
            .iter()
            .enumerate()
            .find(|(_, r)| **r as usize > self.outputs.len())
        {
            return Err(malformed(
                "routes",
                format!(
                    "entry {i} names output {r} but only {} are listed",
                    self.outputs.len()
                ),
            ));
        }
        if let Some(name) = self.outputs.iter().find(|o| o.is_empty()) {
            return Err(malformed(
                "outputs",
                format!("output name {name:?} is empty"),
            ));
        }
        Ok(())
    }
}

impl TransformOutput {
    /// Validate the batch and the rejected indexes against the input.
    pub fn validate(&self, input_len: usize) -> Result<(), EncodingError> {
        self.batch.validate(input_len)?;
        match self.rejected.iter().find(|r| r.index as usize >= input_len) {
            Some(r) => Err(malformed(
                "rejected",
                format!("index {} is not below the input count {input_len}", r.index),
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_get_resolve_routes_keys_and_origins() {
        let mut input = RecordBatch::new(0);
        input.push(None, b"a", 5, 0);
        input.push(None, b"b", 6, 1);
        let mut out = OutputBatch::default();
        out.push(0, Some("x"), Some(b"k"), Some(b"A"), &[], 50);
        out.push(1, None, None, Some(b"B"), &[("h", b"1")], 60);
        out.validate(2).unwrap();
        let got: Vec<_> = out.iter(&input).collect();
        assert_eq!(got[0].output, Some("x"));
        assert_eq!(got[0].key, Some(&b"k"[..]));
        assert_eq!(got[1].output, None);
        assert_eq!(got[1].key, None);
        assert_eq!(got[1].headers().collect::<Vec<_>>(), vec![("h", &b"1"[..])]);
        assert_eq!(got[1].origin, 1);
        assert_eq!(got[1].timestamp, 60);
    }

    #[test]
    fn pass_through_gives_each_input_record_unchanged() {
        let mut input = RecordBatch::new(0);
        input.push(None, b"a", 5, 0);
        input.push_with_headers(Some(b"k"), b"b", &[("h", b"v")], 6, 1);
        input.push_record(&crate::RecordRef::new(Some(b"t"), None, &[], 7, 2));
        let mut out = OutputBatch::default();
        out.push(0, Some("stale"), None, Some(b"x"), &[], 1);
        out.pass_through(&input);
        out.validate(3).unwrap();
        for (o, r) in out.iter(&input).zip(input.iter()) {
            assert_eq!(o.output, None);
            assert_eq!(
                (o.key, o.value_opt(), o.headers),
                (r.key, r.value_opt(), r.headers)
            );
            assert_eq!(o.timestamp, r.timestamp);
        }
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn empty_columns_inherit_from_the_input() {
        let mut input = RecordBatch::new(0);
        input.push(None, b"a", 5, 0);
        let out = OutputBatch::from_parts(OutputParts {
            columns: ColumnParts {
                values: b"A".to_vec(),
                value_ends: vec![1],
                ..Default::default()
            },
            ..Default::default()
        });
        out.validate(1).unwrap();
        let o = out.get(&input, 0);
        assert_eq!((o.origin, o.timestamp, o.output), (0, 5, None));
        assert!(
            out.validate(2)
                .unwrap_err()
                .to_string()
                .starts_with("origins: is empty")
        );
    }
}
