//! One partition this member holds: its transform instance, its state
//! (restored from the pointer its last owner committed with the offset),
//! its own event-time watermark and its position.
//!
//! A partition's watermark is its own (largest event time seen in it
//! minus the delay): in group mode its state holds only its keys, and no
//! member sees the other partitions.

use serde::{Deserialize, Serialize};

use super::member::{Assigned, Position};
use crate::batch::RecordBatch;
use crate::checkpoint::CheckpointStore;
use crate::options::{EngineError, TransformFactory};
use crate::output::Parts;
use crate::state::run::{StepError, TaskRun};
use crate::state::{BatchTime, StatePartition, StatefulOptions, TaskStats};
use crate::transform::Transform;

/// What is committed with a partition's offset (Kafka's offset metadata):
/// which state version goes with that offset, and the event-time high mark.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct Pointer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_dir: Option<String>,
    #[serde(default)]
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_max: Option<i64>,
}

pub(super) struct Owned {
    pub partition: u32,
    transform: Box<dyn Transform>,
    state: Option<StatePartition>,
    event_max: Option<i64>,
    /// The next offset to process.
    pub next: Option<i64>,
    /// Where the open batch started (progress).
    pub start: Option<i64>,
    /// Input taken for the open batch (micro-batch) but not processed.
    pub input: Vec<RecordBatch>,
    /// Output of the open batch or epoch.
    pub parts: Parts,
    pub stats: TaskStats,
    /// Records of the open batch.
    pub rows: u64,
    /// The open batch's clocks, fixed when it started.
    time: Option<BatchTime>,
    /// The watermark the last batch ran with.
    last_watermark: Option<i64>,
    /// The last owner's state directory, deleted once this owner's first
    /// commit has moved the pointer off it.
    pub previous: Option<String>,
}

fn step_error(partition: u32) -> impl Fn(StepError) -> EngineError {
    move |e| match e {
        StepError::Transform(err) => EngineError::StatePartition { partition, err },
        StepError::Checkpoint(e) => EngineError::Checkpoint(e),
    }
}

impl Owned {
    /// Take over `a`: a transform instance, and the state its pointer
    /// names, from then on written under a directory of this owner's own.
    pub fn restore(
        a: &Assigned,
        store: &dyn CheckpointStore,
        options: &StatefulOptions,
        factory: &dyn TransformFactory,
    ) -> Result<Owned, EngineError> {
        let p = a.partition;
        let pointer: Pointer = if a.metadata.is_empty() {
            Pointer::default()
        } else {
            serde_json::from_str(&a.metadata).map_err(|e| {
                EngineError::Checkpoint(crate::CheckpointError::Mismatch(format!(
                    "partition {p}: the metadata committed with its offset is not weir's ({e}): is another application using this consumer group?"
                )))
            })?
        };
        let transform = factory
            .create(0, p)
            .map_err(|err| EngineError::StatePartition { partition: p, err })?;
        let state = if options.stateful {
            let own = format!("group/state/{p}/{}", uuid::Uuid::new_v4().simple());
            let mut s = match &pointer.state_dir {
                Some(dir) => {
                    StatePartition::load(store, dir, pointer.version, options.files.backend)?
                }
                None => StatePartition::load(store, &own, 0, options.files.backend)?,
            };
            tracing::info!(
                partition = p,
                "restored state version {} ({} keys) from {}; resuming at offset {}",
                s.version,
                s.state.rows(),
                pointer
                    .state_dir
                    .as_deref()
                    .unwrap_or("nothing (new partition)"),
                a.position.map_or("the start".into(), |o| o.to_string())
            );
            s.moved_to(own);
            Some(s)
        } else {
            None
        };
        Ok(Owned {
            partition: p,
            transform,
            state,
            event_max: pointer.event_max,
            next: a.position,
            start: a.position,
            input: Vec::new(),
            parts: Vec::new(),
            stats: TaskStats::default(),
            rows: 0,
            time: None,
            last_watermark: None,
            previous: pointer.state_dir.filter(|_| options.stateful),
        })
    }

    /// This partition's current watermark (progress shows the lowest).
    pub fn watermark_for(&self, options: &StatefulOptions) -> Option<i64> {
        self.watermark(options)
    }

    fn watermark(&self, options: &StatefulOptions) -> Option<i64> {
        let et = options.event_time.as_ref()?;
        self.event_max
            .map(|m| m.saturating_sub(et.delay.as_millis() as i64))
    }

    /// Whether a batch without input would do something: the watermark
    /// moved past the one the last batch ran with (windows may close).
    pub fn due_without_input(&self, options: &StatefulOptions) -> bool {
        options.stateful && self.watermark(options) > self.last_watermark
    }

    /// Drop records before the position (a re-delivery); keep the rest
    /// for the batch, moving the position past them.
    pub fn accept(&mut self, mut b: RecordBatch) -> Option<RecordBatch> {
        if let Some(next) = self.next
            && b.offsets().first().is_some_and(|&o| o < next)
        {
            let keep: Vec<usize> = (0..b.len()).filter(|&i| b.offsets()[i] >= next).collect();
            let mut kept = RecordBatch::new(b.partition);
            for i in keep {
                kept.push_record(&b.get(i));
            }
            b = kept;
        }
        let last = *b.offsets().last()?;
        if self.start.is_none() {
            self.start = b.offsets().first().copied();
        }
        self.next = Some(last + 1);
        self.rows += b.len() as u64;
        Some(b)
    }

    /// Run `step` with this partition's task run at the batch's clocks
    /// (fixed when the batch started); statistics carry over between steps.
    fn with_run(
        &mut self,
        options: &StatefulOptions,
        now: i64,
        step: impl FnOnce(&mut TaskRun<'_>, &mut dyn Transform, &mut Parts) -> Result<(), StepError>,
    ) -> Result<BatchTime, EngineError> {
        let time = *self.time.get_or_insert(BatchTime {
            watermark: self.watermark(options),
            processing_time: now,
        });
        let mut run = TaskRun {
            partition: self.partition,
            options,
            state: self.state.as_mut(),
            time,
            stats: std::mem::take(&mut self.stats),
        };
        let r = step(&mut run, &mut *self.transform, &mut self.parts);
        self.stats = std::mem::take(&mut run.stats);
        r.map_err(step_error(self.partition))?;
        Ok(time)
    }

    /// Run `input` through the transform with the batch's clocks.
    pub fn process(
        &mut self,
        input: Vec<RecordBatch>,
        options: &StatefulOptions,
        now: i64,
    ) -> Result<(), EngineError> {
        self.with_run(options, now, |run, t, parts| {
            input
                .into_iter()
                .try_for_each(|b| run.process(t, 0, b, parts))
        })
        .map(|_| ())
    }

    /// Process the batch's waiting input, fire due timers and write the
    /// state's next version (write-once, under this owner's directory);
    /// the event-time high mark moves.
    pub fn finish(
        &mut self,
        options: &StatefulOptions,
        store: &dyn CheckpointStore,
        now: i64,
    ) -> Result<(), EngineError> {
        let input = std::mem::take(&mut self.input);
        let time = self.with_run(options, now, |run, t, parts| {
            for b in input {
                run.process(t, 0, b, parts)?;
            }
            run.finish(t, store, parts)
        })?;
        if let Some(&m) = self.stats.event_max.values().max() {
            self.event_max = Some(self.event_max.map_or(m, |e| e.max(m)));
        }
        self.last_watermark = time.watermark;
        Ok(())
    }

    /// The commit entry for this partition, if it has a position.
    pub fn position(&self) -> Option<Position> {
        let next = self.next?;
        let pointer = Pointer {
            state_dir: self.state.as_ref().map(|s| s.dir.clone()),
            version: self.state.as_ref().map_or(0, |s| s.version),
            event_max: self.event_max,
        };
        let metadata = if pointer == Pointer::default() {
            String::new()
        } else {
            serde_json::to_string(&pointer).expect("serializes")
        };
        Some(Position {
            partition: self.partition,
            next,
            metadata,
        })
    }

    /// Hand over the open batch's output, statistics, record count and
    /// start position, and start the next batch.
    pub fn take_batch(&mut self) -> (Parts, TaskStats, u64, Option<i64>) {
        self.time = None;
        let start = std::mem::replace(&mut self.start, self.next);
        (
            std::mem::take(&mut self.parts),
            std::mem::take(&mut self.stats),
            std::mem::take(&mut self.rows),
            start,
        )
    }

    /// Records set aside before the transform (unreadable state keys),
    /// rejected as bad records.
    pub fn reject(&mut self, bad: RecordBatch, reasons: &[String]) {
        let out =
            crate::state::run::reject_all(&bad, crate::output::RejectKind::BadRecord, reasons);
        self.parts.push((bad, out));
    }

    pub fn state_rows(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.state.rows())
    }
}
