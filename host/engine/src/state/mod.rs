//! Keyed state, timers and event time for stateful transforms.
//!
//! Every state partition owns a [`StatePartition`]: an ordered map
//! checkpointed as one version per batch (micro-batch) or epoch
//! (continuous). Records reach a state partition by their state key (see
//! [`crate::exchange`]), so a key's state is in one place whatever
//! the input's layout; its directory is `state/0/<partition>` (operator 0,
//! the pipeline's one transform). The engine moves the state into a [`StateContext`] for each
//! transform call, so a WASM guest reads and writes it through host imports
//! without the engine knowing about wasmtime.

pub(crate) mod event_time;
pub(crate) mod files;
pub(crate) mod keyed;
mod map;
pub(crate) mod run;
pub(crate) mod watermark;

pub use event_time::{EventStats, EventTimeOptions, LatePolicy, iso};
pub use files::{StateFileOptions, StatePartition};
pub use keyed::{ENTRY_OVERHEAD, KeyedState, TimeDomain, Timer};
pub use map::StateBackend;
pub use run::{BatchTime, StatefulOptions, TaskStats};
pub use watermark::{Watermark, WatermarkRule};

use super::batch::{RecordBatch, RecordRef};

/// How a stateful query emits results (Spark's output modes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutputMode {
    /// Each result once, when it is final (the watermark passed it).
    #[default]
    Append,
    /// Results changed by the batch, every batch.
    Update,
    /// The whole result table, every batch.
    Complete,
}

impl OutputMode {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputMode::Append => "append",
            OutputMode::Update => "update",
            OutputMode::Complete => "complete",
        }
    }
}

/// What a stateful transform call sees besides its input: the task's state
/// and the batch's clocks.
#[derive(Debug, Default)]
pub struct StateContext {
    pub state: KeyedState,
    pub watermark: Option<i64>,
    pub processing_time: i64,
    pub output_mode: OutputMode,
    /// The query has an event-time configuration (a watermark will come).
    pub event_time: bool,
    /// The name of the source whose records the call processes; `None`
    /// for fired timers.
    pub source: Option<String>,
}

/// Timers that fired, as a batch (key = timer key, timestamp = timer time,
/// no value), so their outputs flow to the sinks like any batch's outputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FiredTimers {
    pub batch: RecordBatch,
    pub domains: Vec<TimeDomain>,
}

impl FiredTimers {
    pub fn new(partition: u32, timers: &[Timer]) -> Self {
        let mut batch = RecordBatch::new(partition);
        for t in timers {
            batch.push_record(&RecordRef::new(Some(&t.key), Some(&[]), &[], t.time, -1));
        }
        FiredTimers {
            batch,
            domains: timers.iter().map(|t| t.domain).collect(),
        }
    }

    /// Add one fired timer.
    pub fn push(&mut self, domain: TimeDomain, time: i64, key: &[u8]) {
        self.batch
            .push_record(&RecordRef::new(Some(key), Some(&[]), &[], time, -1));
        self.domains.push(domain);
    }

    /// The timers, one by one.
    pub fn timers(&self) -> Vec<Timer> {
        self.batch
            .iter()
            .zip(&self.domains)
            .map(|(r, &domain)| Timer {
                domain,
                time: r.timestamp,
                key: r.key.unwrap_or_default().to_vec(),
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.domains.len()
    }

    /// Whether `batch` holds fired timers rather than source records
    /// (timers have offset -1; source offsets are never negative).
    pub fn is_fired(batch: &RecordBatch) -> bool {
        batch.offsets().first() == Some(&-1)
    }

    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }
}

/// Directory of a task's state in the checkpoint.
pub fn state_dir(operator: usize, partition: u32) -> String {
    format!("state/{operator}/{partition}")
}
