//! Moves batches between the engine's representation and the generated WIT
//! types. Both share one columnar layout, so this is a handful of buffer
//! copies or moves per batch, never work per record.

use super::bindings::{Batch, Header, OutputBatch, Record};
use crate::engine::batch::{RecordBatch, RecordRef};
use crate::engine::output::{OutputBatch as EngineOutput, Rejected, TransformOutput};

/// Copy `b` into `wire`, reusing `wire`'s buffers: after the first batch no
/// allocation (and no fresh-page faults for large batches) remains.
pub(crate) fn fill_wit(wire: &mut Batch, b: &RecordBatch) {
    fn copy<T: Copy>(dst: &mut Vec<T>, src: &[T]) {
        dst.clear();
        dst.extend_from_slice(src);
    }
    wire.partition = b.partition;
    copy(&mut wire.values, &b.values);
    copy(&mut wire.value_ends, &b.value_ends);
    copy(&mut wire.keys, &b.keys);
    copy(&mut wire.key_ends, &b.key_ends);
    copy(&mut wire.has_key, &b.has_key);
    copy(&mut wire.headers, &b.headers);
    copy(&mut wire.header_ends, &b.header_ends);
    copy(&mut wire.timestamps, &b.timestamps);
    copy(&mut wire.offsets, &b.offsets);
}

pub(crate) fn empty_wit() -> Batch {
    Batch {
        partition: 0,
        values: Vec::new(),
        value_ends: Vec::new(),
        keys: Vec::new(),
        key_ends: Vec::new(),
        has_key: Vec::new(),
        headers: Vec::new(),
        header_ends: Vec::new(),
        timestamps: Vec::new(),
        offsets: Vec::new(),
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
