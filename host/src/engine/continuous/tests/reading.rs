//! How tasks read: larger chunks while behind, and quiet tasks.

use super::*;

#[test]
fn a_task_that_is_behind_reads_larger_chunks_until_it_catches_up() {
    let parts = data(20_000);
    let mut reader = MemReader(parts.clone(), 0);
    let marker = marker::Marker::new(0);
    let mut poll = task::Poll::default();
    let mut position = 0;
    let mut sizes = vec![];
    while position < 20_000 {
        let batch = poll
            .next(
                &marker,
                &mut reader,
                &mut position,
                0,
                (64, u64::MAX),
                "mem",
            )
            .unwrap()
            .unwrap();
        sizes.push(batch.len());
    }
    // Doubling while full, up to 16 times the base chunk.
    assert_eq!(sizes[..6], [64, 128, 256, 512, 1024, 1024]);
    // Caught up: a read that is not full goes back to the base chunk.
    parts[0]
        .lock()
        .unwrap()
        .extend((0..10).map(|i| format!("new-{i}")));
    let batch = poll
        .next(
            &marker,
            &mut reader,
            &mut position,
            0,
            (64, u64::MAX),
            "mem",
        )
        .unwrap()
        .unwrap();
    assert_eq!(batch.len(), 10);
    parts[0]
        .lock()
        .unwrap()
        .extend((0..100).map(|i| format!("more-{i}")));
    let batch = poll
        .next(
            &marker,
            &mut reader,
            &mut position,
            0,
            (64, u64::MAX),
            "mem",
        )
        .unwrap()
        .unwrap();
    assert_eq!(batch.len(), 64);
    // Behind again, but little room left in the epoch: no more than fits,
    // or one base chunk.
    parts[0]
        .lock()
        .unwrap()
        .extend((0..1000).map(|i| format!("late-{i}")));
    let batch = poll
        .next(&marker, &mut reader, &mut position, 0, (64, 10), "mem")
        .unwrap()
        .unwrap();
    assert_eq!(batch.len(), 64);
    let batch = poll
        .next(
            &marker,
            &mut reader,
            &mut position,
            0,
            (64, u64::MAX),
            "mem",
        )
        .unwrap()
        .unwrap();
    assert_eq!(batch.len(), 256);
}

#[test]
fn records_after_tasks_went_quiet_are_committed_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let parts = data(0);
    let sink = Committed::default();
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        exit_when_idle: Some(Duration::from_millis(600)),
        ..ContinuousOptions::default()
    };
    let writer = {
        let parts = parts.clone();
        std::thread::spawn(move || {
            // Bursts with pauses longer than a quiet task's sleep, and
            // some records for one partition only.
            for burst in 0..6 {
                std::thread::sleep(Duration::from_millis(150));
                for (p, part) in parts.iter().enumerate() {
                    if burst % 3 == 2 && p == 1 {
                        continue;
                    }
                    let mut v = part.lock().unwrap();
                    let n = v.len();
                    v.extend((n..n + 100).map(|i| format!("p{p}-{i}")));
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
    let committed = sink.0.lock().unwrap();
    let ids: Vec<u64> = committed.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for (p, part) in parts.iter().enumerate() {
        let want = part.lock().unwrap().clone();
        let got: Vec<String> = committed
            .iter()
            .flat_map(|(_, r)| {
                r.iter()
                    .filter(|v| v.starts_with(&format!("p{p}-")))
                    .cloned()
            })
            .collect();
        assert_eq!(got, want, "partition {p}");
    }
}
