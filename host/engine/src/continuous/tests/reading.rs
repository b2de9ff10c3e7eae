//! How tasks read: larger chunks while behind, and quiet tasks.

use super::*;

/// The next chunk of partition 0 (base chunk 64 records, `room` bytes left
/// in the epoch); there must be one.
fn take(
    poll: &mut task::Poll,
    reader: &mut dyn PartitionReader,
    position: &mut u64,
    room: u64,
) -> RecordBatch {
    let marker = marker::Marker::new(0);
    poll.next(&marker, reader, position, 0, (64, room), "mem")
        .unwrap()
        .expect("a chunk")
}

#[test]
fn a_task_that_is_behind_reads_larger_chunks_until_it_catches_up() {
    let parts = data(20_000);
    let mut reader = parts.source("mem").reader(0).unwrap();
    let mut poll = task::Poll::default();
    let mut position = 0;
    let mut sizes = vec![];
    while position < 20_000 {
        let batch = take(&mut poll, &mut *reader, &mut position, u64::MAX);
        sizes.push(batch.len());
    }
    // Doubling while full, up to 16 times the base chunk.
    assert_eq!(sizes[..6], [64, 128, 256, 512, 1024, 1024]);
    // Caught up: a read that is not full goes back to the base chunk.
    parts.extend(0, (0..10).map(|i| format!("new-{i}")));
    let batch = take(&mut poll, &mut *reader, &mut position, u64::MAX);
    assert_eq!(batch.len(), 10);
    parts.extend(0, (0..100).map(|i| format!("more-{i}")));
    let batch = take(&mut poll, &mut *reader, &mut position, u64::MAX);
    assert_eq!(batch.len(), 64);
    // Behind again, but little room left in the epoch: no more than fits,
    // or one base chunk.
    parts.extend(0, (0..1000).map(|i| format!("late-{i}")));
    let batch = take(&mut poll, &mut *reader, &mut position, 10);
    assert_eq!(batch.len(), 64);
    let batch = take(&mut poll, &mut *reader, &mut position, u64::MAX);
    assert_eq!(batch.len(), 256);
}

#[test]
fn records_after_tasks_went_quiet_are_committed_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let parts = data(0);
    let sink = MemorySink::default();
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        // Well past the pauses between bursts, even on a loaded machine.
        exit_when_idle: Some(Duration::from_secs(2)),
        ..ContinuousOptions::default()
    };
    let writer = {
        let parts = parts.clone();
        std::thread::spawn(move || {
            // Bursts with pauses longer than a quiet task's sleep, and
            // some records for one partition only.
            for burst in 0..6 {
                std::thread::sleep(Duration::from_millis(150));
                for p in 0..2u32 {
                    if burst % 3 == 2 && p == 1 {
                        continue;
                    }
                    let n = parts.lengths()[p as usize];
                    parts.extend(p, (n..n + 100).map(|i| format!("p{p}-{i}")));
                }
            }
        })
    };
    let mut q = query(
        dir.path(),
        parts.clone(),
        factory(Duration::ZERO, Arc::new(Mutex::new([None, None]))),
        &sink,
        options,
    );
    q.run(&mut |_| {}).unwrap();
    writer.join().unwrap();
    let committed = sink.batches();
    let ids: Vec<u64> = committed.iter().map(|b| b.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for p in 0..2u32 {
        let want = parts.records(p);
        let got: Vec<String> = committed
            .iter()
            .flat_map(|b| {
                b.values
                    .iter()
                    .filter(|v| v.starts_with(&format!("p{p}-")))
                    .cloned()
            })
            .collect();
        assert_eq!(got, want, "partition {p}");
    }
}

/// Partition 0 of a [`MemoryTopic`], followed, from 300 ms after the
/// start on, by a position that holds no record (as a Kafka transaction
/// marker does): the task has gone quiet by then.
struct MarkerSource(MemoryTopic, Instant);

struct MarkerReader(MemoryTopic, Box<dyn PartitionReader>, Instant);

impl PartitionReader for MarkerReader {
    fn read(
        &mut self,
        from: u64,
        until: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, ConnectorError> {
        let records = self.0.lengths()[0];
        let to = self.1.read(from, until, max, out)?;
        // Past the last record: the marker's position, and no record.
        let marker = self.2.elapsed() > Duration::from_millis(300);
        Ok(if to == records && out.is_empty() && marker {
            records + 1
        } else {
            to
        })
    }

    fn wait_for_data(&mut self, timeout: Duration) -> bool {
        self.1.wait_for_data(timeout)
    }
}

impl ContinuousSource for MarkerSource {
    fn identity(&self) -> String {
        "mem with a marker".into()
    }
    fn partition_count(&self) -> u32 {
        1
    }
    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
        Ok(vec![0])
    }
    fn reader(&self, _: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
        let inner = self.0.source("mem").reader(0)?;
        Ok(Box::new(MarkerReader(self.0.clone(), inner, self.1)))
    }
    fn positions(&self, offset: &crate::Offset) -> Result<Vec<u64>, ConnectorError> {
        offset.partitions(1)
    }
    fn latest_positions(&mut self) -> Option<Vec<u64>> {
        Some(vec![self.0.lengths()[0] + 1])
    }
}

#[test]
fn a_move_past_a_records_less_position_is_reported_before_going_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let parts = MemoryTopic::with(vec![(0..300).map(|i| format!("p0-{i}")).collect()]);
    let sink = MemorySink::default();
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        exit_when_idle: Some(Duration::from_millis(200)),
        ..ContinuousOptions::default()
    };
    let mut q = query_on(
        dir.path(),
        Box::new(MarkerSource(parts, Instant::now())),
        factory(Duration::ZERO, Arc::new(Mutex::new([None, None]))),
        &sink,
        options,
    );
    // Exits only once the committed position is past the marker (the
    // source's latest); a quiet task that had not reported the move would
    // keep it running.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let summary = q.run(&mut |_| {}).unwrap();
        tx.send(summary.input_rows).unwrap();
    });
    let rows = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the query never saw itself caught up");
    assert_eq!(rows, 300);
    let all: usize = sink.batches().iter().map(|b| b.values.len()).sum();
    assert_eq!(all, 300);
}
