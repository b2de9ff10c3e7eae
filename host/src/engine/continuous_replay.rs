//! Re-running an uncommitted epoch after a crash: the recorded ranges are
//! read again exactly and transformed, so the epoch's output is the same.

use std::time::{Duration, Instant};

use super::{ContinuousQuery, source_err};
use crate::engine::batch::RecordBatch;
use crate::engine::continuous_task::Parts;
use crate::engine::options::EngineError;
use crate::engine::tasks::check_rejected;

/// How long a replay waits for recorded records that do not arrive (a
/// broker restarting) before it fails.
const REPLAY_PATIENCE: Duration = Duration::from_secs(60);

impl ContinuousQuery {
    /// Re-read an uncommitted epoch's exact ranges and transform them.
    pub(super) fn replay(&mut self, start: &[u64], end: &[u64]) -> Result<Parts, EngineError> {
        let name = self.source.description();
        let mut parts = Vec::new();
        for (p, (s, e)) in start.iter().zip(end).enumerate() {
            if e <= s {
                continue;
            }
            let mut reader = self.source.reader(p as u32).map_err(source_err(&name))?;
            let mut batch = RecordBatch::new(p as u32);
            let mut pos = *s;
            let mut stalled = Instant::now();
            while pos < *e {
                let next = reader
                    .read(pos, *e, usize::MAX, &mut batch)
                    .map_err(source_err(&name))?;
                if next > pos {
                    stalled = Instant::now();
                } else if stalled.elapsed() > REPLAY_PATIENCE {
                    return Err(EngineError::Source {
                        name: name.clone(),
                        err: crate::engine::connector::ConnectorError(format!(
                            "partition {p}: offsets up to {e} were recorded but only {pos} are readable"
                        )),
                    });
                }
                pos = next;
            }
            let mut t = self.transform(p as u32)?;
            let mut out = t
                .process_batch(&batch)
                .map_err(|err| EngineError::Transform {
                    source_name: name.clone(),
                    partition: p as u32,
                    err,
                })?;
            check_rejected(&self.options.error_policy, &name, &batch, &mut out)?;
            parts.push((batch, out));
        }
        Ok(parts)
    }
}
