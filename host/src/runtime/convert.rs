//! Moves batches between the engine's representation and the generated WIT
//! types. Both share one columnar layout, so this is a handful of buffer
//! copies or moves per batch, never work per record. Contract 0.1 has no
//! absent value: a record without one (a tombstone) reaches the guest with
//! an empty value, and every guest output has a value.

use super::bindings::{Header, OutputBatch, Record};
use crate::engine::batch::{RecordBatch, RecordRef};
use crate::engine::output::{OutputBatch as EngineOutput, RejectKind, Rejected, TransformOutput};

/// The WIT `batch` record lowered straight from the engine's buffers: the
/// only copy is the canonical-ABI copy into guest memory.
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lower)]
#[component(record)]
pub(crate) struct BatchRef<'a> {
    partition: u32,
    values: &'a [u8],
    #[component(name = "value-ends")]
    value_ends: &'a [u32],
    keys: &'a [u8],
    #[component(name = "key-ends")]
    key_ends: &'a [u32],
    #[component(name = "has-key")]
    has_key: &'a [bool],
    headers: &'a [u8],
    #[component(name = "header-ends")]
    header_ends: &'a [u32],
    timestamps: &'a [i64],
    offsets: &'a [i64],
}

impl<'a> From<&'a RecordBatch> for BatchRef<'a> {
    fn from(b: &'a RecordBatch) -> Self {
        BatchRef {
            partition: b.partition,
            values: &b.values,
            value_ends: &b.value_ends,
            keys: &b.keys,
            key_ends: &b.key_ends,
            has_key: &b.has_key,
            headers: &b.headers,
            header_ends: &b.header_ends,
            timestamps: &b.timestamps,
            offsets: &b.offsets,
        }
    }
}

pub(crate) fn from_wit(o: OutputBatch) -> TransformOutput {
    TransformOutput {
        batch: EngineOutput {
            values: o.values,
            value_ends: o.value_ends,
            keys: o.keys,
            key_ends: o.key_ends,
            has_key: o.has_key,
            has_value: Vec::new(),
            headers: o.headers,
            header_ends: o.header_ends,
            timestamps: o.timestamps,
            origins: o.origins,
            outputs: o.outputs,
            routes: o.routes,
        },
        rejected: o
            .rejected
            .into_iter()
            .map(|r| Rejected {
                index: r.index,
                kind: RejectKind::BadRecord,
                reason: r.reason,
            })
            .collect(),
    }
}

/// Refill `scratch` with record `r`, reusing its buffers across records.
pub(crate) fn fill_record(scratch: &mut Record, partition: u32, r: &RecordRef<'_>) {
    scratch.value.clear();
    scratch.value.extend_from_slice(r.value);
    match (r.key, &mut scratch.key) {
        (Some(k), Some(buf)) => {
            buf.clear();
            buf.extend_from_slice(k);
        }
        (Some(k), slot) => *slot = Some(k.to_vec()),
        (None, slot) => *slot = None,
    }
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
