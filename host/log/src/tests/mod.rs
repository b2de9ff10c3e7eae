use super::*;
use std::path::Path;
use weir_engine::RecordRef;

fn batch(values: &[&str]) -> RecordBatch {
    let mut b = RecordBatch::new(0);
    for (i, v) in values.iter().enumerate() {
        b.push(
            if i % 2 == 0 { Some(b"k") } else { None },
            v.as_bytes(),
            100 + i as i64,
            0,
        );
    }
    b
}

fn read_all(t: &mut Topic, p: u32) -> Vec<String> {
    let end = t.committed_ends().unwrap()[p as usize];
    let mut out = RecordBatch::new(p);
    t.read(p, 0, end, &mut out).unwrap();
    out.iter()
        .map(|r| String::from_utf8(r.value.to_vec()).unwrap())
        .collect()
}

#[test]
fn append_commit_and_read_back_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Topic::create_with(dir.path(), "t", 2, 200).unwrap();
    let values: Vec<String> = (0..50).map(|i| format!("value-{i}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let out = t
        .append(None, &[batch(&refs[..30]), batch(&refs[30..])], || {})
        .unwrap();
    assert_eq!(out, Appended::Committed(vec![30, 20]));
    t.append(None, &[batch(&["late"])], || {}).unwrap();
    // A fresh handle sees the same data, keys and timestamps included.
    let mut t2 = Topic::open(dir.path(), "t").unwrap();
    let got = read_all(&mut t2, 0);
    assert_eq!(got.len(), 31);
    assert_eq!(got[29], "value-29");
    assert_eq!(got[30], "late");
    let mut some = RecordBatch::new(0);
    t2.read(0, 5, 8, &mut some).unwrap();
    assert_eq!(some.offsets(), vec![5, 6, 7]);
    assert_eq!(some.get(0).value, b"value-5");
    assert_eq!(some.get(1).key, Some(&b"k"[..]));
    assert_eq!(some.get(0).key, None);
    assert_eq!(some.get(0).timestamp, 105);
    assert!(
        std::fs::read_dir(dir.path().join("t/0")).unwrap().count() > 1,
        "segments rolled"
    );
}

#[test]
fn replayed_writer_sequence_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Topic::create(dir.path(), "t", 1).unwrap();
    let w = |sequence| {
        Some(Writer {
            id: [7; 16],
            sequence,
        })
    };
    assert!(matches!(
        t.append(w(0), &[batch(&["a"])], || {}).unwrap(),
        Appended::Committed(_)
    ));
    assert_eq!(
        t.append(w(0), &[batch(&["a"])], || {}).unwrap(),
        Appended::AlreadyCommitted
    );
    t.append(w(1), &[batch(&["b"])], || {}).unwrap();
    assert_eq!(read_all(&mut t, 0), vec!["a", "b"]);
}

#[test]
fn uncommitted_and_torn_data_is_invisible_then_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Topic::create(dir.path(), "t", 1).unwrap();
    t.append(None, &[batch(&["a", "b"])], || {}).unwrap();
    // Data written but the process "dies" before the commit entry.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        t.append(None, &[batch(&["lost"])], || panic!("crash before commit"))
    }));
    assert!(r.is_err());
    let mut reader = Topic::open(dir.path(), "t").unwrap();
    assert_eq!(read_all(&mut reader, 0), vec!["a", "b"]);
    // A torn tail (half a record) on top of that.
    let seg = dir.path().join("t/0/00000000000000000000.log");
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes.extend_from_slice(&[9, 0, 0, 0, 1, 2]);
    std::fs::write(&seg, &bytes).unwrap();
    let mut writer = Topic::open(dir.path(), "t").unwrap();
    writer.append(None, &[batch(&["c"])], || {}).unwrap();
    assert_eq!(read_all(&mut writer, 0), vec!["a", "b", "c"]);
}

#[test]
fn missing_topic_and_duplicate_create_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let err = Topic::open(dir.path(), "nope").err().unwrap().to_string();
    assert!(err.contains("topic `nope` does not exist"), "{err}");
    Topic::create(dir.path(), "t", 3).unwrap();
    let err = Topic::create(dir.path(), "t", 1).err().unwrap().to_string();
    assert!(
        err.contains("already exists") && err.contains("3 partition"),
        "{err}"
    );
}

#[test]
fn a_leftover_segment_that_cannot_be_removed_fails_the_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("0");
    let mut part = Partition::open(p.clone(), 1 << 20).unwrap();
    part.append(&batch(&["a", "b"]), true).unwrap();
    // A later segment past the commit (a crashed writer's roll-over) that
    // cannot be removed: a non-empty directory under its name. Ignoring
    // the failure would let the next append land before stale bytes.
    std::fs::create_dir_all(p.join(format!("{:020}.log", 2)).join("x")).unwrap();
    let mut part = Partition::open(p, 1 << 20).unwrap();
    let err = part.truncate_to(2, &mut || Ok(())).unwrap_err().to_string();
    assert!(err.contains("00000000000000000002.log"), "{err}");
}

#[test]
fn a_record_without_a_value_reads_back_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Topic::create(dir.path(), "t", 1).unwrap();
    let mut b = RecordBatch::new(0);
    b.push(Some(b"k"), b"v", 1, 0);
    b.push_record(&RecordRef::new(Some(b"k"), None, &[], 2, 0));
    b.push(Some(b"k"), b"", 3, 0);
    t.append(None, &[b], || {}).unwrap();
    let mut t = Topic::open(dir.path(), "t").unwrap();
    let mut out = RecordBatch::new(0);
    t.read(0, 0, 3, &mut out).unwrap();
    let got: Vec<Option<&[u8]>> = out.iter().map(|r| r.value_opt()).collect();
    assert_eq!(got, vec![Some(&b"v"[..]), None, Some(&b""[..])]);
    assert!(out.iter().all(|r| r.key == Some(&b"k"[..])));
}

#[test]
fn a_large_segment_read_in_small_steps_reads_each_byte_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    let mut p = partition::Partition::open(path.clone(), u64::MAX).unwrap();
    let values: Vec<String> = (0..20_000).map(|i| format!("{i:0>100}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    assert_eq!(p.append(&batch(&refs), true).unwrap(), 20_000);
    let file: u64 = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    // A fresh reader follows the data 50 records at a time, as a
    // continuous task does; then once in one step.
    let mut fresh = partition::Partition::open(path.clone(), u64::MAX).unwrap();
    for from in (0..20_000).step_by(50) {
        let mut out = RecordBatch::new(0);
        fresh.read(from, from + 50, &mut out).unwrap();
        assert_eq!(out.len(), 50);
        assert_eq!(out.get(49).value, values[from as usize + 49].as_bytes());
    }
    // Each step scans what it indexes and reads what it returns, plus a
    // small margin: not the rest of the segment, nor from an index entry
    // hundreds of records back.
    let read = fresh.read_bytes();
    assert!(read <= 2 * file + file / 4, "{read} bytes read of {file}");
    let mut whole = partition::Partition::open(path, u64::MAX).unwrap();
    let mut out = RecordBatch::new(0);
    whole.read(0, 20_000, &mut out).unwrap();
    assert_eq!(out.len(), 20_000);
    assert!(whole.read_bytes() <= 2 * file + (4 << 20));
}

#[test]
fn a_read_or_a_cut_near_the_end_of_a_long_partition_scans_only_its_last_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("0");
    // About nine records per 1,000-byte segment: some 220 segments.
    let mut p = partition::Partition::open(path.clone(), 1_000).unwrap();
    let values: Vec<String> = (0..2_000).map(|i| format!("{i:0>100}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    assert_eq!(p.append(&batch(&refs), true).unwrap(), 2_000);
    let segments = std::fs::read_dir(&path).unwrap().count();
    assert!(segments > 200, "{segments} segments");
    let mut fresh = partition::Partition::open(path.clone(), 1_000).unwrap();
    let mut out = RecordBatch::new(0);
    fresh.read(1_990, 2_000, &mut out).unwrap();
    assert_eq!(out.len(), 10);
    assert_eq!(out.get(9).value, values[1_999].as_bytes());
    // About 240 KB in all: only the two segments holding the records are
    // read (scanned, then read), not every one before them.
    assert!(
        fresh.read_bytes() <= 8_000,
        "{} bytes read",
        fresh.read_bytes()
    );
    // A writer's check of the committed end reads the last segment only.
    let mut writer = partition::Partition::open(path.clone(), 1_000).unwrap();
    assert!(!writer.is_clean(2_000));
    writer.truncate_to(2_000, &mut || Ok(())).unwrap();
    assert!(writer.is_clean(2_000));
    assert!(
        writer.read_bytes() <= 1_500,
        "{} bytes read",
        writer.read_bytes()
    );
    assert_eq!(writer.append(&batch(&["next"]), true).unwrap(), 2_001);
    // Everything still reads back in order from a fresh handle.
    let mut all = RecordBatch::new(0);
    partition::Partition::open(path, 1_000)
        .unwrap()
        .read(0, 2_001, &mut all)
        .unwrap();
    assert_eq!(all.len(), 2_001);
    assert_eq!(all.get(1_000).value, values[1_000].as_bytes());
    assert_eq!(all.get(2_000).value, b"next");
}

#[test]
fn a_reader_opened_before_a_segment_rolls_reads_into_the_new_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Topic::create_with(dir.path(), "t", 1, 200).unwrap();
    let mut reader = Topic::open(dir.path(), "t").unwrap();
    writer.append(None, &[batch(&["first"])], || {}).unwrap();
    assert_eq!(read_all(&mut reader, 0), ["first"]);
    let values: Vec<String> = (0..40).map(|i| format!("value-{i:03}")).collect();
    for chunk in values.chunks(5) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        writer.append(None, &[batch(&refs)], || {}).unwrap();
    }
    assert!(std::fs::read_dir(dir.path().join("t/0")).unwrap().count() > 2);
    let got = read_all(&mut reader, 0);
    assert_eq!(got.len(), 41);
    assert_eq!(got[40], "value-039");
}

mod segment_index;
mod uncommitted;
