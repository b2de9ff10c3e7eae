//! The sinks that take records as tasks produce them ([`EarlyWrites`]):
//! every task hands them its new output after each chunk, and the
//! coordinator ends each epoch for them once every task has reported it.

use std::sync::Arc;

use crate::connector::{EarlyWrites, Sink, SinkBatch};
use crate::options::EngineError;
use crate::output::Parts;

/// (route, handle, description) of each such sink.
type Entry = (Option<String>, Arc<dyn EarlyWrites>, String);

#[derive(Clone, Default)]
pub(crate) struct EarlySinks(Arc<Vec<Entry>>);

impl EarlySinks {
    pub(crate) fn of(sinks: &[(Option<String>, Box<dyn Sink>)]) -> Self {
        EarlySinks(Arc::new(
            sinks
                .iter()
                .filter_map(|(route, s)| Some((route.clone(), s.early_writes()?, s.description())))
                .collect(),
        ))
    }

    pub(crate) fn begin(&self, epoch: u64) {
        for (_, w, _) in self.0.iter() {
            w.begin(epoch);
        }
    }

    /// Hand `parts[*written..]` (what a task produced since its last call)
    /// to every early sink as output of `epoch`.
    pub(crate) fn write_new(
        &self,
        epoch: u64,
        parts: &Parts,
        written: &mut usize,
    ) -> Result<(), EngineError> {
        let new = &parts[(*written).min(parts.len())..];
        *written = parts.len();
        if new.is_empty() {
            return Ok(());
        }
        for (route, w, name) in self.0.iter() {
            let batch = SinkBatch {
                parts: new,
                route: route.as_deref(),
            };
            w.write(epoch, &batch).map_err(|err| EngineError::Sink {
                name: name.clone(),
                err,
            })?;
        }
        Ok(())
    }

    pub(crate) fn end_epoch(&self, epoch: u64) -> Result<(), EngineError> {
        for (_, w, name) in self.0.iter() {
            w.end_epoch(epoch).map_err(|err| EngineError::Sink {
                name: name.clone(),
                err,
            })?;
        }
        Ok(())
    }
}
