//! The epoch writer and readers of uncommitted records.

use super::*;

fn values(b: &RecordBatch) -> Vec<String> {
    b.iter()
        .map(|r| String::from_utf8(r.value.to_vec()).unwrap())
        .collect()
}

fn part(p: u32, vals: &[&str]) -> RecordBatch {
    let mut b = RecordBatch::new(p);
    for v in vals {
        b.push(None, v.as_bytes(), 0, 0);
    }
    b
}

/// Everything `r` returns for partition 0 until nothing is new.
fn fetch_all(r: &mut UncommittedReader) -> Result<Vec<String>, u64> {
    let mut got = Vec::new();
    loop {
        match r.fetch(0, 3).unwrap() {
            Fetched::Records(b) if b.is_empty() => return Ok(got),
            Fetched::Records(b) => got.extend(values(&b)),
            Fetched::Rewound(to) => return Err(to),
        }
    }
}

/// Fetch until nothing is new, applying the reader's rule to `seen`: a
/// rewind to `to` voids what was returned from there on.
fn drain(r: &mut UncommittedReader, seen: &mut Vec<String>) {
    loop {
        match r.fetch(0, 13).unwrap() {
            Fetched::Records(b) if b.is_empty() => return,
            Fetched::Records(b) => seen.extend(values(&b)),
            Fetched::Rewound(to) => seen.truncate(to as usize),
        }
    }
}

fn open(dir: &Path, writer: u8) -> EpochWriter {
    let t = Topic::open(dir, "t").unwrap();
    EpochWriter::open(t, [writer; 16], "a test").unwrap()
}

#[test]
fn records_are_seen_uncommitted_at_once_and_committed_at_the_epoch_end() {
    let dir = tempfile::tempdir().unwrap();
    Topic::create(dir.path(), "t", 1).unwrap();
    let w = open(dir.path(), 1);
    w.begin(0);
    let mut reader =
        UncommittedReader::new(Topic::open(dir.path(), "t").unwrap(), vec![0]).unwrap();
    let mut committed = Topic::open(dir.path(), "t").unwrap();
    w.write(0, vec![part(0, &["a", "b"])]).unwrap();
    assert_eq!(fetch_all(&mut reader), Ok(vec!["a".into(), "b".into()]));
    assert_eq!(committed.committed_ends().unwrap(), [0]);
    // A task already in epoch 1 is held back until epoch 0 ends, so that
    // epoch 0's commit covers no record of epoch 1.
    w.write(1, vec![part(0, &["x"])]).unwrap();
    w.write(0, vec![part(0, &["c"])]).unwrap();
    assert_eq!(fetch_all(&mut reader), Ok(vec!["c".into()]));
    w.end_epoch(0).unwrap();
    assert_eq!(fetch_all(&mut reader), Ok(vec!["x".into()]));
    // Written after its end: an engine bug, refused.
    let err = w.write(0, vec![part(0, &["late"])]).unwrap_err();
    assert!(err.to_string().contains("after it ended"), "{err}");
    assert_eq!(w.commit(0).unwrap(), Some(3));
    assert_eq!(committed.committed_ends().unwrap(), [3]);
    assert_eq!(read_all(&mut committed, 0), ["a", "b", "c"]);
    w.end_epoch(1).unwrap();
    assert_eq!(w.commit(1).unwrap(), Some(1));
    assert_eq!(read_all(&mut committed, 0), ["a", "b", "c", "x"]);
}

#[test]
fn a_crashed_epoch_is_cut_and_its_readers_rewind_to_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    Topic::create_with(dir.path(), "t", 1, 64).unwrap();
    let mut reader =
        UncommittedReader::new(Topic::open(dir.path(), "t").unwrap(), vec![0]).unwrap();
    {
        let w = open(dir.path(), 1);
        w.begin(0);
        w.write(0, vec![part(0, &["a", "b"])]).unwrap();
        w.end_epoch(0).unwrap();
        w.commit(0).unwrap();
        // Epoch 1, over several segments, never commits: the run dies.
        w.write(1, vec![part(0, &["lost-1", "lost-2", "lost-3", "lost-4"])])
            .unwrap();
    }
    assert_eq!(
        fetch_all(&mut reader),
        Ok(["a", "b", "lost-1", "lost-2", "lost-3", "lost-4"]
            .map(String::from)
            .to_vec())
    );
    // The next run cuts the uncommitted tail; the reader learns it.
    let w = open(dir.path(), 1);
    assert_eq!(fetch_all(&mut reader), Err(2));
    assert_eq!(reader.position(0), 2);
    w.begin(1);
    w.write(1, vec![part(0, &["again"])]).unwrap();
    assert_eq!(fetch_all(&mut reader), Ok(vec!["again".into()]));
    w.end_epoch(1).unwrap();
    w.commit(1).unwrap();
    let mut committed = Topic::open(dir.path(), "t").unwrap();
    assert_eq!(read_all(&mut committed, 0), ["a", "b", "again"]);
    // A reader starting now has nothing to unlearn.
    let mut fresh = UncommittedReader::new(Topic::open(dir.path(), "t").unwrap(), vec![0]).unwrap();
    assert_eq!(
        fetch_all(&mut fresh),
        Ok(["a", "b", "again"].map(String::from).to_vec())
    );
}

#[test]
fn an_epoch_committed_by_an_earlier_run_is_not_written_again() {
    let dir = tempfile::tempdir().unwrap();
    Topic::create(dir.path(), "t", 2).unwrap();
    {
        let w = open(dir.path(), 1);
        w.begin(0);
        w.write(0, vec![part(0, &["a"]), part(1, &["b"])]).unwrap();
        w.end_epoch(0).unwrap();
        assert_eq!(w.commit(0).unwrap(), Some(2));
    }
    // The engine's own commit of epoch 0 was lost: it re-runs epoch 0.
    let w = open(dir.path(), 1);
    w.begin(0);
    w.write(0, vec![part(0, &["a"]), part(1, &["b"])]).unwrap();
    w.end_epoch(0).unwrap();
    assert_eq!(w.commit(0).unwrap(), None);
    let mut t = Topic::open(dir.path(), "t").unwrap();
    assert_eq!(t.committed_ends().unwrap(), [1, 1]);
    assert_eq!(read_all(&mut t, 1), ["b"]);
}

#[test]
fn another_writer_gets_a_clear_error_while_an_epoch_writer_holds_the_topic() {
    let dir = tempfile::tempdir().unwrap();
    Topic::create(dir.path(), "t", 1).unwrap();
    let w = open(dir.path(), 1);
    let mut other = Topic::open(dir.path(), "t").unwrap();
    let err = other.append(None, &[batch(&["x"])], || {}).unwrap_err();
    assert!(
        err.to_string().contains("held by a test") && err.to_string().contains("as-produced"),
        "{err}"
    );
    let err = EpochWriter::open(Topic::open(dir.path(), "t").unwrap(), [2; 16], "b")
        .err()
        .unwrap();
    assert!(err.to_string().contains("held by a test"), "{err}");
    drop(w);
    other.append(None, &[batch(&["x"])], || {}).unwrap();
}

#[test]
fn a_cut_by_an_ordinary_writer_is_logged_for_uncommitted_readers() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Topic::create(dir.path(), "t", 1).unwrap();
    t.append(None, &[batch(&["a"])], || {}).unwrap();
    // A writer that died between its data and its commit entry.
    let crashed = std::panic::catch_unwind(|| {
        let mut t = Topic::open(dir.path(), "t").unwrap();
        t.append(None, &[batch(&["torn"])], || panic!("crash"))
            .unwrap();
    });
    assert!(crashed.is_err());
    let mut reader =
        UncommittedReader::new(Topic::open(dir.path(), "t").unwrap(), vec![0]).unwrap();
    assert_eq!(fetch_all(&mut reader), Ok(vec!["a".into(), "torn".into()]));
    t.append(None, &[batch(&["b"])], || {}).unwrap();
    assert_eq!(fetch_all(&mut reader), Err(1));
    assert_eq!(fetch_all(&mut reader), Ok(vec!["b".into()]));
}

/// Forty runs of a writer, each dying with its last epoch uncommitted,
/// while a reader follows: what it keeps, rewinds applied, is exactly what
/// was committed (record sizes vary, so a misaligned read would show).
#[test]
fn a_reader_racing_writers_that_crash_and_cut_never_misreads() {
    let dir = tempfile::tempdir().unwrap();
    Topic::create(dir.path(), "t", 1).unwrap();
    let root = dir.path().to_path_buf();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let writer = std::thread::spawn(move || {
        let mut committed_values = Vec::new();
        for run in 0..40u64 {
            let w = open(&root, 1);
            let first = run * 3;
            w.begin(first);
            for e in first..first + 3 {
                let vals: Vec<String> = (0..50).map(|i| format!("run{run}-e{e}-{i}")).collect();
                for chunk in vals.chunks(7) {
                    let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    w.write(e, vec![part(0, &refs)]).unwrap();
                }
                w.end_epoch(e).unwrap();
                // Every run's last epoch dies uncommitted.
                if e < first + 2 {
                    w.commit(e).unwrap();
                    committed_values.extend(vals);
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        committed_values
    });
    let mut reader =
        UncommittedReader::new(Topic::open(dir.path(), "t").unwrap(), vec![0]).unwrap();
    let mut seen: Vec<String> = Vec::new();
    loop {
        let finished = done.load(std::sync::atomic::Ordering::SeqCst);
        drain(&mut reader, &mut seen);
        if finished {
            break;
        }
    }
    let committed = writer.join().unwrap();
    // The last run's uncommitted epoch is still there to read; a new
    // writer cuts it.
    drop(open(dir.path(), 1));
    drain(&mut reader, &mut seen);
    assert_eq!(seen, committed);
}

#[test]
fn an_epoch_without_records_commits_where_the_last_one_ended() {
    let dir = tempfile::tempdir().unwrap();
    Topic::create(dir.path(), "t", 1).unwrap();
    let w = open(dir.path(), 1);
    w.begin(0);
    w.write(0, vec![part(0, &["a", "b"])]).unwrap();
    // Idle epochs end without keeping anything.
    w.end_epoch(3).unwrap();
    assert_eq!(w.commit(0).unwrap(), Some(2));
    assert_eq!(w.commit(2).unwrap(), Some(0));
    let err = w.commit(4).unwrap_err();
    assert!(err.to_string().contains("before it ended"), "{err}");
    let t = Topic::open(dir.path(), "t").unwrap();
    assert_eq!(t.committed_ends().unwrap(), [2]);
}
