//! The per-record call path (`call = "record"`): one `process-record`
//! call per input record through the optional `record-transform` export,
//! the record lowered from a scratch buffer reused across records.

use super::{WasmTransform, arm, classify};
use crate::bindings::{Position, RECORD_INTERFACE, Record, RecordError};
use crate::convert::fill_record;
use weir_engine::TransformError;
use weir_engine::{RecordBatch, StateKeys};
use weir_engine::{RejectKind, Rejected, TransformOutput};

impl WasmTransform {
    pub(super) fn call_records(
        &mut self,
        input: &RecordBatch,
    ) -> Result<TransformOutput, TransformError> {
        let ticks = self.deadline_ticks();
        let limits = self.limits;
        let _running = self.running();
        let mut scratch = std::mem::replace(&mut self.scratch, empty_record());
        let live = self.ensure_live()?;
        let Some(records) = &live.records else {
            self.scratch = scratch;
            return Err(TransformError::Fatal(format!(
                "call = \"record\" needs the `{RECORD_INTERFACE}` export, which this component lacks"
            )));
        };
        let mut out = TransformOutput::default();
        let mut result = Ok(());
        // A stateful call's `context.state-keys` holds the one record's key.
        let keyed = live.store.data().call_keys.is_some();
        for i in 0..input.len() {
            let r = input.get(i);
            if keyed {
                live.store.data_mut().call_keys = r.state_key.map(|k| {
                    let mut one = StateKeys::default();
                    one.push(k);
                    one
                });
            }
            fill_record(&mut scratch, input.partition, &r);
            arm(&mut live.store, ticks, limits.fuel);
            match records.call_process_record(&mut live.store, &scratch) {
                Ok(Ok(records)) => {
                    for o in records {
                        let headers: Vec<(&str, &[u8])> = o
                            .headers
                            .iter()
                            .map(|h| (h.name.as_str(), h.value.as_slice()))
                            .collect();
                        out.batch.push(
                            i as u32,
                            o.output.as_deref(),
                            o.key.as_deref(),
                            o.value.as_deref(),
                            &headers,
                            o.timestamp.unwrap_or(r.timestamp),
                        );
                    }
                }
                Ok(Err(RecordError::BadRecord(reason))) => out.rejected.push(Rejected {
                    index: i as u32,
                    kind: RejectKind::BadRecord,
                    reason,
                }),
                Ok(Err(RecordError::Broken(msg))) => {
                    result = Err(TransformError::Fatal(format!(
                        "record {i} (partition {}, offset {}): {msg}",
                        input.partition, r.offset
                    )));
                    break;
                }
                Err(e) => {
                    result = Err(classify(&e, &live.store, &limits));
                    break;
                }
            }
        }
        self.scratch = scratch;
        result.map(|()| out)
    }
}

pub(super) fn empty_record() -> Record {
    Record {
        key: None,
        value: None,
        headers: Vec::new(),
        timestamp: 0,
        position: Position {
            partition: 0,
            offset: 0,
        },
    }
}
