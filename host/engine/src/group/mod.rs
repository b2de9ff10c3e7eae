//! Group mode: the same pipeline run by several processes, which share its
//! input partitions through a consumer group (Kafka Streams' design; no
//! cluster manager of weir's own).
//!
//! Each process holds the partitions the group gives it. A batch (or, in
//! continuous mode, an epoch: records processed as they arrive) ends with
//! one transaction that writes the output and commits the input positions,
//! each with a pointer to the partition's state version, so output,
//! positions and state move together; a member that lost its partitions is
//! fenced and its transaction aborted. No transaction is open while the
//! member polls, which is where rebalances happen: a revoked partition's
//! uncommitted work is dropped (its new owner redoes it from the committed
//! position), a newly assigned one restores the committed state first.
//!
//! There is no offsets log here: the group's committed offsets are the
//! write-ahead record, and a re-run after a crash starts from them.

mod member;
mod partition;
mod progress;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use member::{Assigned, CommitError, GroupMember, Polled, Position};
use partition::Owned;

use super::checkpoint::CheckpointStore;
use super::options::{EngineError, ErrorPolicy, RunSummary, TransformFactory};
use super::progress::Progress;
use super::state::StatefulOptions;
use super::tasks::check_rejected;

/// How a group query runs.
#[derive(Debug, Clone)]
pub struct GroupOptions {
    /// Micro-batch: the trigger interval; continuous: the epoch length.
    pub commit_interval: Duration,
    /// Records are processed as they arrive (continuous) or at the
    /// batch's end (micro-batch).
    pub continuous: bool,
    /// Most records in one batch (micro-batch) or one poll.
    pub max_records: usize,
    pub error_policy: ErrorPolicy,
    pub state: StatefulOptions,
    /// Threads the member's partitions are processed on
    /// ([`crate::parallel::default_parallelism`]).
    pub parallelism: usize,
}

pub struct GroupQuery {
    store: Arc<dyn CheckpointStore>,
    member: Box<dyn GroupMember>,
    factory: Box<dyn TransformFactory>,
    options: GroupOptions,
    owned: BTreeMap<u32, Owned>,
    stop: Arc<AtomicBool>,
    run_id: String,
    batch_id: u64,
    summary: RunSummary,
    /// Partitions moved since the last progress report.
    moved: bool,
    /// The threads partitions are processed on, kept across batches.
    workers: crate::parallel::Workers,
}

impl GroupQuery {
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        member: Box<dyn GroupMember>,
        factory: Box<dyn TransformFactory>,
        mut options: GroupOptions,
    ) -> Result<GroupQuery, EngineError> {
        // State partitions are the input's: records must already be
        // partitioned by the state key (checked per record).
        options.state.partitioning.exchange = false;
        options.state.partitioning.partitions = member.partition_count();
        options.state.files.write_once = true;
        let workers = crate::parallel::Workers::new(options.parallelism, "weir-task")
            .map_err(EngineError::Threads)?;
        Ok(GroupQuery {
            workers,
            store,
            member,
            factory,
            options,
            owned: BTreeMap::new(),
            stop: Arc::new(AtomicBool::new(false)),
            run_id: uuid::Uuid::new_v4().to_string(),
            batch_id: 0,
            summary: RunSummary::default(),
            moved: false,
        })
    }

    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Poll, process and commit until stopped; the group then hands this
    /// member's partitions to the others.
    pub fn run(&mut self, report: &mut dyn FnMut(&Progress)) -> Result<RunSummary, EngineError> {
        let result = self.run_loop(report);
        self.member.close();
        result.map(|()| self.summary.clone())
    }

    fn run_loop(&mut self, report: &mut dyn FnMut(&Progress)) -> Result<(), EngineError> {
        let mut started = Instant::now();
        let mut taken: usize = 0;
        while !self.stop.load(Ordering::SeqCst) {
            let interval = self.options.commit_interval;
            let wait = interval
                .saturating_sub(started.elapsed())
                .clamp(Duration::from_millis(1), Duration::from_millis(100));
            let room = self.options.max_records.saturating_sub(taken).max(1);
            let polled = self
                .member
                .poll(room, wait)
                .map_err(|err| EngineError::Source {
                    name: self.member.description(),
                    err,
                })?;
            taken += self.apply(polled)?;
            let full = !self.options.continuous && taken >= self.options.max_records;
            if full || started.elapsed() >= interval {
                self.commit(started, report)?;
                started = Instant::now();
                taken = 0;
            }
        }
        Ok(())
    }

    /// Rebalances, then records: returns the records taken.
    fn apply(&mut self, polled: Polled) -> Result<usize, EngineError> {
        self.moved |= !polled.revoked.is_empty() || !polled.assigned.is_empty();
        for p in polled.revoked {
            if let Some(o) = self.owned.remove(&p) {
                tracing::info!(
                    partition = p,
                    "partition revoked; {} uncommitted record(s) dropped for its new owner to redo",
                    o.rows
                );
            }
        }
        self.restore(polled.assigned)?;
        let mut taken = 0;
        let mut fresh: BTreeMap<u32, Vec<_>> = BTreeMap::new();
        for b in polled.batches {
            let Some(o) = self.owned.get_mut(&b.partition) else {
                continue;
            };
            let Some(b) = o.accept(b) else { continue };
            taken += b.len();
            let b = match self.options.state.stateful {
                true => {
                    let routed = self.options.state.partitioning.route(0, b).map_err(|m| {
                        EngineError::NotPartitionedByKey {
                            source_name: self.member.description(),
                            partition: m.partition,
                            offset: m.offset,
                            belongs: m.belongs,
                            partitions: self.options.state.partitioning.partitions,
                        }
                    })?;
                    if let Some((bad, why)) = routed.unreadable {
                        o.reject(bad, &why);
                    }
                    routed.parts.into_iter().map(|(_, b)| b).collect()
                }
                false => vec![b],
            };
            fresh.entry(o.partition).or_default().extend(b);
        }
        if self.options.continuous {
            self.run_tasks(fresh, false)?;
        } else {
            for (p, bs) in fresh {
                self.owned.get_mut(&p).expect("held").input.extend(bs);
            }
        }
        Ok(taken)
    }

    /// After a commit: the state directories of partitions' earlier
    /// owners are no longer named by any committed pointer.
    fn remove_previous_state(&mut self) {
        for o in self.owned.values_mut() {
            if let Some(dir) = o.previous.take()
                && let Err(e) = super::state::StatePartition::remove(&*self.store, &dir)
            {
                tracing::warn!(
                    partition = o.partition,
                    "removing the earlier owner's state {dir}: {e} (left in place)"
                );
            }
        }
    }

    fn restore(&mut self, assigned: Vec<Assigned>) -> Result<(), EngineError> {
        for a in assigned {
            let o = Owned::restore(&a, &*self.store, &self.options.state, &*self.factory)?;
            self.owned.insert(a.partition, o);
        }
        Ok(())
    }

    /// Process `input` per partition, partitions in parallel; with
    /// `finish`, also end the batch for every partition that has
    /// something to commit.
    fn run_tasks(
        &mut self,
        mut input: BTreeMap<u32, Vec<crate::RecordBatch>>,
        finish: bool,
    ) -> Result<usize, EngineError> {
        let options = &self.options.state;
        let (store, now) = (&*self.store, options.clock.now_ms());
        let mut work: Vec<(&mut Owned, Vec<_>)> = Vec::new();
        for o in self.owned.values_mut() {
            let i = input.remove(&o.partition);
            let due = finish && (o.rows > 0 || !o.parts.is_empty() || o.due_without_input(options));
            if i.is_some() || due {
                work.push((o, i.unwrap_or_default()));
            }
        }
        let ran = work.len();
        let step = |(o, i): (&mut Owned, Vec<_>)| -> Result<(), EngineError> {
            o.process(i, options, now)?;
            if finish {
                o.finish(options, store, now)?;
            }
            Ok(())
        };
        let results = self.workers.map(work, step);
        results.into_iter().collect::<Result<(), _>>().map(|()| ran)
    }

    /// End the batch: finish every partition with work, then write the
    /// output and commit the positions in one transaction.
    fn commit(
        &mut self,
        started: Instant,
        report: &mut dyn FnMut(&Progress),
    ) -> Result<(), EngineError> {
        let batch_start = Instant::now();
        if self.run_tasks(BTreeMap::new(), true)? == 0 {
            // Nothing to commit, but a rebalance shows in progress at once.
            if std::mem::take(&mut self.moved) {
                let none = progress::Batch::default();
                report(&self.progress(&none, started, Duration::ZERO, Duration::ZERO));
            }
            return Ok(());
        }
        let mut parts = Vec::new();
        let mut batch = progress::Batch::default();
        for o in self.owned.values_mut() {
            let (p, stats, rows, start) = o.take_batch();
            batch.add(o.partition, start, o.next, rows, &stats);
            parts.extend(p);
        }
        let name = self.member.description();
        for (b, out) in parts.iter_mut() {
            batch.rejected += check_rejected(&self.options.error_policy, &name, b, out)?;
        }
        let positions: Vec<Position> = self.owned.values().filter_map(Owned::position).collect();
        let processed = batch_start.elapsed();
        let commit_start = Instant::now();
        super::faults::point("group-before-commit", self.batch_id);
        match self.member.commit(&parts, &positions) {
            Ok(rows) => {
                super::faults::point("group-after-commit", self.batch_id);
                batch.output_rows = rows;
                let progress = self.progress(&batch, started, processed, commit_start.elapsed());
                self.summary.batches += 1;
                self.summary.input_rows += batch.rows;
                self.summary.output_rows += rows;
                self.batch_id += 1;
                self.moved = false;
                report(&progress);
                self.remove_previous_state();
                Ok(())
            }
            Err(e) => {
                tracing::warn!(
                    "batch of partitions {:?} not committed ({e}); its output is discarded and the partitions start again from their last commit",
                    self.owned.keys().collect::<Vec<_>>()
                );
                self.owned.clear();
                let again = self.member.rewind().map_err(|err| EngineError::Source {
                    name: self.member.description(),
                    err,
                })?;
                self.restore(again)
            }
        }
    }
}
