//! Starting a continuous query's threads: one task per source partition,
//! or, for stateful queries, the partition readers, the exchange channels
//! and one task per state partition.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use super::marker::Marker;
use super::task::{Report, Task};
use super::{ContinuousQuery, exchange};
use crate::options::EngineError;

/// What every task thread of a running query shares with the coordinator:
/// the epoch marker, the halt flag and the report channel.
pub(super) struct Control {
    pub marker: Arc<Marker>,
    pub halt: Arc<AtomicBool>,
    pub tx: mpsc::SyncSender<Result<Report, EngineError>>,
    pub early: super::early::EarlySinks,
    pub quiet: Arc<super::quiet::Quiet>,
}

impl ContinuousQuery {
    /// One task per source partition (stateless, or event time only).
    pub(super) fn spawn_tasks(
        &self,
        epoch: u64,
        positions: &[u64],
        control: &Control,
    ) -> Result<Vec<std::thread::JoinHandle<()>>, EngineError> {
        // One source (see `ContinuousQuery::reading`): readers are its partitions.
        let name = self.inputs.description(0);
        let mut handles = Vec::new();
        for p in 0..self.inputs.readers() {
            let task = Task {
                partition: p,
                position: positions[p as usize],
                epoch,
                reader: self.inputs.reader(p)?,
                transform: self.transform(p)?,
                marker: control.marker.clone(),
                halt: control.halt.clone(),
                tx: control.tx.clone(),
                max_chunk: self.options.max_chunk,
                max_epoch_bytes: self.options.max_epoch_bytes,
                policy: self.options.error_policy.clone(),
                source_name: name.clone(),
                state: if self.options.state.active() {
                    Some(self.task_state(p, epoch)?)
                } else {
                    None
                },
                early: control.early.clone(),
                // Tasks with event time must pass every epoch (watermarks).
                quiet: (!self.options.state.active()).then(|| control.quiet.clone()),
            };
            handles.push(spawn(format!("weir-task-{p}"), move || task.run()));
        }
        Ok(handles)
    }

    /// Stateful queries: partition readers, the key exchange, and one task
    /// per state partition (see [`exchange`]).
    pub(super) fn spawn_exchange(
        &self,
        epoch: u64,
        positions: &[u64],
        control: &Control,
    ) -> Result<Vec<std::thread::JoinHandle<()>>, EngineError> {
        let readers = self.inputs.readers() as usize;
        let states = self.options.state.partitioning.partitions as usize;
        // channels[q][r]: reader r to state partition q.
        let mut outs: Vec<Vec<mpsc::SyncSender<exchange::Msg>>> = vec![Vec::new(); readers];
        let mut ins = Vec::with_capacity(states);
        for _ in 0..states {
            let mut row = Vec::with_capacity(readers);
            for out in outs.iter_mut() {
                let (s, r) = mpsc::sync_channel(exchange::CHANNEL_DEPTH);
                out.push(s);
                row.push(r);
            }
            ins.push(row);
        }
        let mut tasks = Vec::with_capacity(states);
        for (q, ins) in ins.into_iter().enumerate() {
            let q = q as u32;
            tasks.push(exchange::StateTask {
                partition: q,
                epoch,
                transform: self.state_transform(q)?,
                ins,
                sources: (0..readers as u32)
                    .map(|r| {
                        let s = self.inputs.locate(r).0;
                        (s, self.inputs.description(s))
                    })
                    .collect(),
                state: self.task_state(q, epoch)?,
                halt: control.halt.clone(),
                tx: control.tx.clone(),
                policy: self.options.error_policy.clone(),
                early: control.early.clone(),
            });
        }
        let mut readers_ = Vec::with_capacity(readers);
        for (r, outs) in outs.into_iter().enumerate() {
            let (source, partition) = self.inputs.locate(r as u32);
            readers_.push(exchange::Reader {
                index: r as u32,
                source,
                partition,
                position: positions[r],
                epoch,
                reader: self.inputs.reader(r as u32)?,
                partitioning: self.options.state.partitioning.clone(),
                outs,
                marker: control.marker.clone(),
                halt: control.halt.clone(),
                tx: control.tx.clone(),
                max_chunk: self.options.max_chunk,
                policy: self.options.error_policy.clone(),
                source_name: self.inputs.description(source),
                early: control.early.clone(),
            });
        }
        let mut handles = Vec::new();
        for t in tasks {
            let q = t.partition;
            handles.push(spawn(format!("weir-state-{q}"), move || t.run()));
        }
        for r in readers_ {
            let name = format!("weir-reader-{}-{}", r.source, r.partition);
            handles.push(spawn(name, move || r.run()));
        }
        Ok(handles)
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .expect("spawning a task thread")
}
