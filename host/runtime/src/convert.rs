//! Moves batches between the engine's representation and the generated WIT
//! types. Both share one columnar layout, so this is a handful of buffer
//! copies or moves per batch, never work per record, except for headers:
//! the engine keeps them as encoded bytes (see `engine::batch`), the
//! contract as a typed list, so batches with headers convert each header.

use weir_wire::{check_ends, check_optional, end, span};

use super::bindings::{BatchError, Header, OutputBatch, Record};
use weir_engine::OutputBatch as EngineOutput;
use weir_engine::{
    ColumnParts, OutputParts, RejectKind, Rejected, TransformError, TransformOutput,
};
use weir_engine::{EncodingError, RecordBatch, RecordRef, encode_header};

/// One header lowered from the engine's encoded bytes, without copying.
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lower)]
#[component(record)]
pub(crate) struct HeaderRef<'a> {
    name: &'a str,
    value: &'a [u8],
}

/// The WIT `batch` record lowered straight from the engine's buffers: the
/// only copy is the canonical-ABI copy into guest memory.
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lower)]
#[component(record)]
pub(crate) struct BatchRef<'a> {
    partition: u32,
    values: &'a [u8],
    #[component(name = "value-ends")]
    value_ends: &'a [u32],
    #[component(name = "has-value")]
    has_value: &'a [bool],
    keys: &'a [u8],
    #[component(name = "key-ends")]
    key_ends: &'a [u32],
    #[component(name = "has-key")]
    has_key: &'a [bool],
    headers: Vec<HeaderRef<'a>>,
    #[component(name = "header-ends")]
    header_ends: Vec<u32>,
    timestamps: &'a [i64],
    offsets: &'a [i64],
}

impl<'a> From<&'a RecordBatch> for BatchRef<'a> {
    fn from(b: &'a RecordBatch) -> Self {
        let c = b.columns().slices();
        let (mut headers, mut header_ends) = (Vec::new(), Vec::new());
        if !c.header_ends.is_empty() {
            header_ends.reserve(b.len());
            for i in 0..b.len() {
                let encoded = span(c.headers, c.header_ends, i);
                headers.extend(
                    weir_engine::HeaderIter::new(encoded)
                        .map(|(name, value)| HeaderRef { name, value }),
                );
                header_ends.push(end(headers.len()));
            }
        }
        BatchRef {
            partition: b.partition,
            values: c.values,
            value_ends: c.value_ends,
            has_value: c.has_value,
            keys: c.keys,
            key_ends: c.key_ends,
            has_key: c.has_key,
            headers,
            header_ends,
            timestamps: b.timestamps(),
            offsets: b.offsets(),
        }
    }
}

/// The engine's form of a guest's output; refuses header ends that do not
/// fit the header list (the rest is checked by `TransformOutput::validate`).
pub(crate) fn from_wit(o: OutputBatch) -> Result<TransformOutput, EncodingError> {
    let n = o.value_ends.len();
    check_optional("header-ends", &o.header_ends, n)?;
    check_ends("header-ends", &o.header_ends, o.headers.len())?;
    let (mut headers, mut header_ends) = (Vec::new(), Vec::new());
    if !o.header_ends.is_empty() {
        header_ends.reserve(n);
        for i in 0..n {
            for h in span(&o.headers, &o.header_ends, i) {
                encode_header(&mut headers, &h.name, &h.value);
            }
            header_ends.push(end(headers.len()));
        }
    }
    Ok(TransformOutput {
        batch: EngineOutput::from_parts(OutputParts {
            columns: ColumnParts {
                values: o.values,
                value_ends: o.value_ends,
                has_value: o.has_value,
                keys: o.keys,
                key_ends: o.key_ends,
                has_key: o.has_key,
                headers,
                header_ends,
            },
            timestamps: o.timestamps,
            origins: o.origins,
            outputs: o.outputs,
            routes: o.routes,
        }),
        rejected: o
            .rejected
            .into_iter()
            .map(|r| Rejected {
                index: r.index,
                kind: RejectKind::BadRecord,
                reason: r.reason,
            })
            .collect(),
    })
}

/// Refill `scratch` with record `r`, reusing its buffers across records.
pub(crate) fn fill_record(scratch: &mut Record, partition: u32, r: &RecordRef<'_>) {
    refill(&mut scratch.value, r.value_opt());
    refill(&mut scratch.key, r.key);
    scratch.headers.clear();
    scratch
        .headers
        .extend(r.headers().map(|(name, value)| Header {
            name: name.to_owned(),
            value: value.to_vec(),
        }));
    scratch.timestamp = r.timestamp;
    scratch.position.partition = partition;
    scratch.position.offset = r.offset;
}

/// Set an optional buffer to `src`, keeping its allocation when it can.
fn refill(slot: &mut Option<Vec<u8>>, src: Option<&[u8]>) {
    match (src, slot) {
        (Some(v), Some(buf)) => {
            buf.clear();
            buf.extend_from_slice(v);
        }
        (Some(v), slot) => *slot = Some(v.to_vec()),
        (None, slot) => *slot = None,
    }
}

/// The engine's form of a `process-batch` or `on-timers` result; `what`
/// prefixes a broken transform's message.
pub(crate) fn from_call(
    r: Result<OutputBatch, BatchError>,
    what: &str,
) -> Result<TransformOutput, TransformError> {
    match r {
        Ok(out) => from_wit(out).map_err(|e| TransformError::Malformed(e.to_string())),
        Err(BatchError::BadRecord(b)) => Err(TransformError::BadRecord {
            index: b.index,
            reason: b.reason,
        }),
        Err(BatchError::Broken(msg)) => Err(TransformError::Fatal(format!("{what}{msg}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::BadRecord;

    fn output(headers: Vec<Header>, header_ends: Vec<u32>) -> OutputBatch {
        OutputBatch {
            values: b"ab".to_vec(),
            value_ends: vec![1, 2],
            has_value: vec![],
            keys: vec![],
            key_ends: vec![],
            has_key: vec![],
            headers,
            header_ends,
            timestamps: vec![],
            origins: vec![],
            outputs: vec![],
            routes: vec![],
            rejected: vec![BadRecord {
                index: 1,
                reason: "no".into(),
            }],
        }
    }

    fn header(name: &str, value: &[u8]) -> Header {
        Header {
            name: name.into(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn typed_headers_become_the_engines_encoding_per_record() {
        let o = output(vec![header("a", b"1"), header("b", b"")], vec![0, 2]);
        let out = from_wit(o).unwrap();
        let mut input = RecordBatch::new(0);
        input.push(None, b"x", 0, 0);
        input.push(None, b"y", 0, 1);
        out.validate(2).unwrap();
        assert_eq!(out.batch.get(&input, 0).headers().count(), 0);
        let second = out.batch.get(&input, 1);
        let h: Vec<_> = second.headers().collect();
        assert_eq!(h, [("a", &b"1"[..]), ("b", &b""[..])]);
        assert_eq!(out.rejected[0].kind, RejectKind::BadRecord);
    }

    #[test]
    fn header_ends_past_the_list_are_malformed_not_a_panic() {
        let e = from_wit(output(vec![header("a", b"1")], vec![1, 3])).unwrap_err();
        assert_eq!(e.column, "header-ends");
        assert!(from_wit(output(vec![], vec![0])).is_err());
    }

    #[test]
    fn input_headers_lower_as_a_list_with_index_ends() {
        let mut b = RecordBatch::new(0);
        b.push_with_headers(None, b"v", &[("k", b"1"), ("l", b"2")], 0, 0);
        b.push(None, b"w", 0, 1);
        b.push_with_headers(None, b"x", &[("m", b"")], 0, 2);
        let r = BatchRef::from(&b);
        assert_eq!(r.header_ends, [2, 2, 3]);
        assert_eq!(r.headers[2].name, "m");
    }
}
