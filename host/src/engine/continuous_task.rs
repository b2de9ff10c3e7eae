//! One partition's long-running task in continuous mode, and what it
//! reports to the epoch coordinator.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::batch::RecordBatch;
use super::connector::PartitionReader;
use super::options::{EngineError, ErrorPolicy};
use super::output::TransformOutput;
use super::tasks::check_rejected;
use super::transform::Transform;

pub(crate) type Parts = Vec<(RecordBatch, TransformOutput)>;

/// What a task sends the coordinator when it passes an epoch marker.
pub(crate) struct Report {
    pub epoch: u64,
    pub partition: u32,
    pub end: u64,
    pub parts: Parts,
    pub rejected: u64,
}

/// One partition's long-running task.
pub(crate) struct Task {
    pub(crate) partition: u32,
    pub(crate) position: u64,
    pub(crate) epoch: u64,
    pub(crate) reader: Box<dyn PartitionReader>,
    pub(crate) transform: Box<dyn Transform>,
    pub(crate) current: Arc<AtomicU64>,
    pub(crate) halt: Arc<AtomicBool>,
    pub(crate) tx: mpsc::Sender<Result<Report, EngineError>>,
    pub(crate) max_chunk: usize,
    pub(crate) policy: ErrorPolicy,
    pub(crate) source_name: String,
}

impl Task {
    pub(crate) fn run(mut self) {
        if let Err(e) = self.run_inner() {
            let _ = self.tx.send(Err(e));
        }
    }

    fn run_inner(&mut self) -> Result<(), EngineError> {
        let mut buffer: Parts = Vec::new();
        let mut rejected = 0;
        let mut idle_polls = 0u32;
        while !self.halt.load(Ordering::Relaxed) {
            // Passing epoch markers: report everything read before them.
            while self.epoch < self.current.load(Ordering::SeqCst) {
                let report = Report {
                    epoch: self.epoch,
                    partition: self.partition,
                    end: self.position,
                    parts: std::mem::take(&mut buffer),
                    rejected: std::mem::take(&mut rejected),
                };
                if self.tx.send(Ok(report)).is_err() {
                    return Ok(());
                }
                self.epoch += 1;
            }
            let mut batch = RecordBatch::new(self.partition);
            let next = self
                .reader
                .read(self.position, u64::MAX, self.max_chunk, &mut batch)
                .map_err(|err| EngineError::Source {
                    name: self.source_name.clone(),
                    err,
                })?;
            if batch.is_empty() {
                // Positions can move without records (Kafka markers).
                self.position = next;
                // Spin briefly, then back off: new records are picked up in
                // tens of microseconds without burning a core when idle.
                idle_polls = idle_polls.saturating_add(1);
                if idle_polls > 50 {
                    std::thread::sleep(Duration::from_micros(200));
                } else {
                    std::thread::yield_now();
                }
                continue;
            }
            idle_polls = 0;
            let mut out =
                self.transform
                    .process_batch(&batch)
                    .map_err(|err| EngineError::Transform {
                        source_name: self.source_name.clone(),
                        partition: self.partition,
                        err,
                    })?;
            rejected += check_rejected(&self.policy, &self.source_name, &batch, &mut out)?;
            self.position = next;
            buffer.push((batch, out));
        }
        Ok(())
    }
}
