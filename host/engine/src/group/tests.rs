//! The group loop against a scripted member: what reaches a commit after a
//! fenced commit, a revocation and a misplaced key. (The Kafka member and
//! the whole path are tested end to end in tests/e2e/kafka/group.rs.)

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::*;
use crate::batch::RecordBatch;
use crate::connector::ConnectorError;
use crate::exchange::{Partitioning, StateKey};
use crate::output::TransformOutput;
use crate::transform::{FnTransform, Transform, TransformError};
use crate::{CheckpointStore, LocalCheckpointStore, OutputBatch};

type Commits = Arc<Mutex<Vec<(Vec<String>, Vec<Position>)>>>;

/// Hands out scripted polls; its commits are recorded, and the ones listed
/// in `fenced` (by attempt number) fail as a fenced member's would.
struct Scripted {
    polls: VecDeque<Polled>,
    commits: Commits,
    attempts: usize,
    fenced: Vec<usize>,
    committed: BTreeMap<u32, i64>,
    stop: Arc<AtomicBool>,
}

impl GroupMember for Scripted {
    fn description(&self) -> String {
        "scripted".into()
    }
    fn member_id(&self) -> String {
        "m".into()
    }
    fn partition_count(&self) -> u32 {
        4
    }
    fn poll(&mut self, _: usize, _: Duration) -> Result<Polled, ConnectorError> {
        let next = self.polls.pop_front();
        if next.is_none() {
            self.stop.store(true, Ordering::SeqCst);
        }
        Ok(next.unwrap_or_default())
    }
    fn commit(
        &mut self,
        parts: &[(RecordBatch, TransformOutput)],
        positions: &[Position],
    ) -> Result<u64, CommitError> {
        self.attempts += 1;
        if self.fenced.contains(&self.attempts) {
            return Err(CommitError::Fenced("the group moved on".into()));
        }
        let values: Vec<String> = parts
            .iter()
            .flat_map(|(b, o)| {
                o.batch
                    .iter(b)
                    .map(|r| String::from_utf8_lossy(r.value).into_owned())
            })
            .collect();
        for p in positions {
            self.committed.insert(p.partition, p.next);
        }
        self.commits
            .lock()
            .unwrap()
            .push((values.clone(), positions.to_vec()));
        Ok(values.len() as u64)
    }
    fn rewind(&mut self) -> Result<Vec<Assigned>, ConnectorError> {
        Ok(self
            .committed
            .iter()
            .map(|(&partition, &next)| Assigned {
                partition,
                position: Some(next),
                metadata: String::new(),
            })
            .collect())
    }
    fn close(&mut self) {}
}

fn batch(partition: u32, offsets: std::ops::Range<i64>) -> RecordBatch {
    let mut b = RecordBatch::new(partition);
    for o in offsets {
        b.push(Some(b"k"), format!("p{partition}-{o}").as_bytes(), 0, o);
    }
    b
}

fn assign(partition: u32) -> Assigned {
    Assigned {
        partition,
        position: None,
        metadata: String::new(),
    }
}

fn copy() -> Box<dyn TransformFactory> {
    Box::new(
        |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
            Ok(Box::new(FnTransform(
                |input: &RecordBatch, out: &mut OutputBatch| {
                    for (i, r) in input.iter().enumerate() {
                        out.push(i as u32, None, None, Some(r.value), &[], r.timestamp);
                    }
                    Ok(())
                },
            )))
        },
    )
}

fn run(
    polls: Vec<Polled>,
    fenced: Vec<usize>,
    options: GroupOptions,
) -> (Result<RunSummary, EngineError>, Commits) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
    run_on(store, polls, fenced, options)
}

fn run_on(
    store: Arc<dyn CheckpointStore>,
    polls: Vec<Polled>,
    fenced: Vec<usize>,
    options: GroupOptions,
) -> (Result<RunSummary, EngineError>, Commits) {
    let commits = Commits::default();
    let stop = Arc::new(AtomicBool::new(false));
    let member = Scripted {
        polls: polls.into(),
        commits: commits.clone(),
        attempts: 0,
        fenced,
        committed: BTreeMap::new(),
        stop: stop.clone(),
    };
    let mut q = GroupQuery::new(store, Box::new(member), copy(), options).unwrap();
    q.stop = stop;
    (q.run(&mut |_| {}), commits)
}

fn options(commit_interval: Duration, max_records: usize) -> GroupOptions {
    GroupOptions {
        commit_interval,
        continuous: false,
        max_records,
        error_policy: ErrorPolicy::Fail,
        state: StatefulOptions::default(),
        parallelism: 2,
    }
}

fn polled(revoked: Vec<u32>, assigned: Vec<Assigned>, batches: Vec<RecordBatch>) -> Polled {
    Polled {
        revoked,
        assigned,
        batches,
    }
}

#[test]
fn a_fenced_commit_is_redone_from_the_last_commit() {
    let polls = vec![
        polled(vec![], vec![assign(0)], vec![batch(0, 0..3)]),
        polled(vec![], vec![], vec![batch(0, 3..5)]),
        // After the rewind the member delivers offsets 3.. again.
        polled(vec![], vec![], vec![batch(0, 3..6)]),
    ];
    let (r, commits) = run(polls, vec![2], options(Duration::ZERO, 1000));
    r.unwrap();
    let commits = commits.lock().unwrap();
    let values: Vec<&String> = commits.iter().flat_map(|(v, _)| v).collect();
    assert_eq!(values, ["p0-0", "p0-1", "p0-2", "p0-3", "p0-4", "p0-5"]);
    assert_eq!(commits.last().unwrap().1[0].next, 6);
}

#[test]
fn a_revoked_partition_leaves_nothing_in_the_next_commit() {
    let polls = vec![
        polled(vec![], vec![assign(0), assign(1)], vec![batch(0, 0..2)]),
        // Revoked before its batch committed; partition 1 fills the batch.
        polled(vec![0], vec![], vec![batch(1, 0..2)]),
    ];
    let (r, commits) = run(polls, vec![], options(Duration::from_secs(3600), 4));
    r.unwrap();
    let commits = commits.lock().unwrap();
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].0, ["p1-0", "p1-1"]);
    assert_eq!(
        commits[0].1.iter().map(|p| p.partition).collect::<Vec<_>>(),
        [1]
    );
}

#[test]
fn a_record_outside_its_keys_partition_stops_a_stateful_group() {
    let keyed = Partitioning {
        key: StateKey::RecordKey,
        source_keys: Default::default(),
        partitions: 4,
        exchange: false,
    };
    let home = keyed.partition_of(b"k");
    let elsewhere = (home + 1) % 4;
    let mut o = options(Duration::ZERO, 1000);
    o.state.stateful = true;
    o.state.partitioning = keyed;
    let polls = vec![polled(
        vec![],
        vec![assign(elsewhere)],
        vec![batch(elsewhere, 0..1)],
    )];
    let (r, _) = run(polls, vec![], o);
    let err = r.unwrap_err().to_string();
    assert!(
        err.contains(&format!("belongs to state partition {home}")),
        "{err}"
    );
}

/// A partition's state moves: the second owner loads the version the
/// committed pointer names, writes under its own directory, and once its
/// first commit moved the pointer, the first owner's files are gone.
#[test]
fn state_moves_with_the_pointer_and_the_old_owners_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CheckpointStore> = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
    let keyed = Partitioning {
        key: StateKey::RecordKey,
        source_keys: Default::default(),
        partitions: 4,
        exchange: false,
    };
    let p = keyed.partition_of(b"k");
    let mut o = options(Duration::ZERO, 1000);
    o.state.stateful = true;
    o.state.partitioning = keyed;
    let first = vec![polled(vec![], vec![assign(p)], vec![batch(p, 0..3)])];
    let (r, commits) = run_on(store.clone(), first, vec![], o.clone());
    r.unwrap();
    let pointer = commits.lock().unwrap().last().unwrap().1[0].clone();
    assert_eq!(pointer.next, 3);
    let dir_of = |meta: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(meta).unwrap();
        v["state-dir"].as_str().unwrap().to_string()
    };
    let old = dir_of(&pointer.metadata);
    assert_eq!(
        store.list_numbered(&format!("{old}/snapshots")).unwrap(),
        vec![1]
    );
    let moved = Assigned {
        partition: p,
        position: Some(3),
        metadata: pointer.metadata.clone(),
    };
    let second = vec![polled(vec![], vec![moved], vec![batch(p, 3..5)])];
    let (r, commits) = run_on(store.clone(), second, vec![], o);
    r.unwrap();
    let pointer = commits.lock().unwrap().last().unwrap().1[0].clone();
    assert_eq!(pointer.next, 5);
    let new = dir_of(&pointer.metadata);
    assert_ne!(new, old);
    // Version 2 (the first owner's 1, plus this batch), as a snapshot.
    assert_eq!(
        store.list_numbered(&format!("{new}/snapshots")).unwrap(),
        vec![2]
    );
    assert!(
        store
            .list_numbered(&format!("{old}/snapshots"))
            .unwrap()
            .is_empty()
    );
}
