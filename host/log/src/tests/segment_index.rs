//! The segments' index files: a fresh reader of a long segment starts near
//! what it wants instead of scanning from the segment's start, and a lost,
//! torn or stale-looking index never changes what is read.

use super::super::*;
use super::batch;

const RECORDS: usize = 20_000;

fn values() -> Vec<String> {
    (0..RECORDS).map(|i| format!("{i:0>100}")).collect()
}

/// A one-partition topic of `RECORDS` 100-byte values, committed 1,000 at
/// a time; returns the segment file's size.
fn topic(root: &std::path::Path) -> u64 {
    let mut t = Topic::create(root, "t", 1).unwrap();
    let values = values();
    for chunk in values.chunks(1_000) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        t.append(None, &[batch(&refs)], || {}).unwrap();
    }
    std::fs::metadata(segment(root)).unwrap().len()
}

fn segment(root: &std::path::Path) -> std::path::PathBuf {
    root.join("t/0/00000000000000000000.log")
}

fn index(root: &std::path::Path) -> std::path::PathBuf {
    root.join("t/0/00000000000000000000.index")
}

/// Read the last ten records with a fresh handle; returns the bytes it read.
fn read_tail(root: &std::path::Path) -> u64 {
    let mut t = Topic::open(root, "t").unwrap();
    let mut out = RecordBatch::new(0);
    let n = RECORDS as u64;
    t.read(0, n - 10, n, &mut out).unwrap();
    let values = values();
    let got: Vec<&[u8]> = out.iter().map(|r| r.value).collect();
    let want: Vec<&[u8]> = values[RECORDS - 10..]
        .iter()
        .map(|v| v.as_bytes())
        .collect();
    assert_eq!(got, want);
    assert_eq!(out.offsets().last(), Some(&(n as i64 - 1)));
    t.partitions[0].read_bytes()
}

#[test]
fn a_fresh_reader_far_into_a_segment_reads_from_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let file = topic(dir.path());
    // One entry per 512 committed records.
    let entries = std::fs::metadata(index(dir.path())).unwrap().len() / 24;
    assert_eq!(entries, (RECORDS as u64 - 1) / 512);
    let read = read_tail(dir.path());
    assert!(read < 512 * 140, "{read} of {file} bytes read");
    // Without the index file the same read scans the segment.
    std::fs::remove_file(index(dir.path())).unwrap();
    let read = read_tail(dir.path());
    assert!(read >= file, "{read} of {file} bytes read");
}

#[test]
fn a_torn_index_is_used_up_to_its_tear_and_mended_by_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let file = topic(dir.path());
    let full = std::fs::read(index(dir.path())).unwrap();
    // A crash kept half the entries and then a torn one and zeros.
    let mut torn = full[..full.len() / 2 / 24 * 24].to_vec();
    torn.extend_from_slice(&[9; 7]);
    torn.extend_from_slice(&[0; 48]);
    std::fs::write(index(dir.path()), &torn).unwrap();
    let read = read_tail(dir.path());
    assert!(read < file * 3 / 4, "{read} of {file} bytes read");
    // The next commit cuts the tail off and writes what is missing.
    let mut t = Topic::open(dir.path(), "t").unwrap();
    let more: Vec<String> = (0..600).map(|i| format!("more-{i}")).collect();
    let refs: Vec<&str> = more.iter().map(String::as_str).collect();
    t.append(None, &[batch(&refs)], || {}).unwrap();
    let mended = std::fs::read(index(dir.path())).unwrap();
    assert_eq!(&mended[..full.len()], &full[..]);
    assert_eq!(mended.len(), full.len() + 24);
}

#[test]
fn records_a_crashed_writer_left_uncommitted_get_no_index_entries() {
    let dir = tempfile::tempdir().unwrap();
    topic(dir.path());
    let before = std::fs::read(index(dir.path())).unwrap();
    // A writer that appended 2,000 records and died before its commit.
    let mut t = Topic::open(dir.path(), "t").unwrap();
    let ghost: Vec<String> = (0..2_000).map(|i| format!("ghost-{i}")).collect();
    let refs: Vec<&str> = ghost.iter().map(String::as_str).collect();
    t.partitions[0].append(&batch(&refs), true).unwrap();
    drop(t);
    assert_eq!(std::fs::read(index(dir.path())).unwrap(), before);
    // The next writer cuts them and appends others in their place; the
    // index then names the new records, and reads return them.
    let mut t = Topic::open(dir.path(), "t").unwrap();
    let real: Vec<String> = (0..1_100).map(|i| format!("real-{i:04}")).collect();
    let refs: Vec<&str> = real.iter().map(String::as_str).collect();
    t.append(None, &[batch(&refs)], || {}).unwrap();
    let mut fresh = Topic::open(dir.path(), "t").unwrap();
    let mut out = RecordBatch::new(0);
    let end = (RECORDS + 1_100) as u64;
    fresh.read(0, end - 5, end, &mut out).unwrap();
    let got: Vec<&[u8]> = out.iter().map(|r| r.value).collect();
    let want: Vec<&[u8]> = real[1_095..].iter().map(|v| v.as_bytes()).collect();
    assert_eq!(got, want);
}

#[test]
fn an_epoch_writers_commits_write_the_index_too() {
    let dir = tempfile::tempdir().unwrap();
    let t = Topic::create(dir.path(), "t", 1).unwrap();
    let w = EpochWriter::open(t, [7; 16], "a test").unwrap();
    w.begin(0);
    let values = values();
    for (epoch, chunk) in values.chunks(5_000).enumerate() {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        w.write(epoch as u64, vec![batch(&refs)]).unwrap();
        w.end_epoch(epoch as u64).unwrap();
        assert_eq!(w.commit(epoch as u64).unwrap(), Some(5_000));
    }
    drop(w);
    let entries = std::fs::metadata(index(dir.path())).unwrap().len() / 24;
    assert_eq!(entries, (RECORDS as u64 - 1) / 512);
    let file = std::fs::metadata(segment(dir.path())).unwrap().len();
    let read = read_tail(dir.path());
    assert!(read < 512 * 140, "{read} of {file} bytes read");
}
