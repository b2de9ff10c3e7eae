//! Overlapped batches (`microbatch/ahead.rs`): the next batch is read and
//! transformed while the previous one commits, and written ahead only
//! after that commit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::checkpoint::{CheckpointError, CheckpointStore, LocalCheckpointStore};
use crate::testing::MemorySink;
use crate::transform::{FnTransform, TransformError};

/// What happened, in order: `offsets/N`, `commits/N` written, or
/// `transform rK` (a batch whose first record is `rK` transformed).
type Events = Arc<Mutex<Vec<String>>>;

/// A local checkpoint that logs its log writes and takes its time over
/// each commit entry, as an fsync on a slow disk does.
struct SlowCommits {
    inner: LocalCheckpointStore,
    events: Events,
}

impl CheckpointStore for SlowCommits {
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, CheckpointError> {
        self.inner.read(path)
    }
    fn write(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        self.inner.write(path, bytes)
    }
    fn create(&self, path: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        if path.starts_with("commits/") {
            std::thread::sleep(Duration::from_millis(40));
        }
        self.inner.create(path, bytes)?;
        if path.starts_with("offsets/") || path.starts_with("commits/") {
            self.events.lock().unwrap().push(path.to_string());
        }
        Ok(())
    }
    fn list_numbered(&self, dir: &str) -> Result<Vec<u64>, CheckpointError> {
        self.inner.list_numbered(dir)
    }
    fn delete(&self, path: &str) -> Result<(), CheckpointError> {
        self.inner.delete(path)
    }
    fn location(&self) -> String {
        self.inner.location()
    }
}

fn logged_upper(events: Events) -> Box<dyn TransformFactory> {
    Box::new(
        move |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
            let events = events.clone();
            Ok(Box::new(FnTransform(
                move |input: &RecordBatch, out: &mut crate::OutputBatch| {
                    if let Some(first) = input.iter().next() {
                        let first = String::from_utf8_lossy(first.value).into_owned();
                        events.lock().unwrap().push(format!("transform {first}"));
                    }
                    for (i, r) in input.iter().enumerate() {
                        let upper = r.value.to_ascii_uppercase();
                        out.push(i as u32, None, None, Some(&upper), &[], r.timestamp);
                    }
                    Ok(())
                },
            )))
        },
    )
}

fn position(events: &[String], event: &str) -> usize {
    events
        .iter()
        .position(|e| e == event)
        .unwrap_or_else(|| panic!("no `{event}` in {events:?}"))
}

/// An AvailableNow query over `n` records, at most `limit` a batch, into
/// `sink`, its checkpoint's log writes and transform calls in `events`.
fn logged_query(
    dir: &std::path::Path,
    n: usize,
    limit: Option<u64>,
    events: &Events,
    sink: &MemorySink,
) -> MicroBatchQuery {
    let store = Arc::new(SlowCommits {
        inner: LocalCheckpointStore::open(dir).unwrap(),
        events: events.clone(),
    });
    MicroBatchQuery::new(
        store,
        vec![Box::new(source(n, limit))],
        logged_upper(events.clone()),
        vec![(None, Box::new(sink.clone()))],
        QueryOptions {
            trigger: Trigger::AvailableNow,
            ..QueryOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn the_next_batch_runs_while_one_commits_and_is_written_ahead_only_after() {
    let dir = tempfile::tempdir().unwrap();
    let events = Events::default();
    let sink = MemorySink::default();
    let mut q = logged_query(dir.path(), 40, Some(10), &events, &sink);
    let mut sizes = Vec::new();
    q.run(&mut |p| sizes.push(p.num_input_rows)).unwrap();
    assert_eq!(sizes, [10, 10, 10, 10]);
    let expected: Vec<String> = (0..40).map(|i| format!("R{i}")).collect();
    assert_eq!(sink.values(), expected);
    let events = events.lock().unwrap().clone();
    for n in 1..4 {
        let committed = position(&events, &format!("commits/{}", n - 1));
        // Spark's recovery rule: never an entry ahead of an uncommitted one.
        assert!(
            committed < position(&events, &format!("offsets/{n}")),
            "{events:?}"
        );
        // The batch was transformed while the one before it committed.
        assert!(
            position(&events, &format!("transform r{}", n * 10)) < committed,
            "{events:?}"
        );
    }
}

#[test]
fn a_batch_that_takes_all_there_is_decides_the_next_after_its_commit() {
    // No limit: the one batch takes everything, no batch is known to
    // follow, and nothing runs ahead.
    let dir = tempfile::tempdir().unwrap();
    let events = Events::default();
    logged_query(dir.path(), 5, None, &events, &MemorySink::default())
        .run(&mut |_| {})
        .unwrap();
    let events = events.lock().unwrap().clone();
    assert_eq!(events, ["offsets/0", "transform r0", "commits/0"]);
}
