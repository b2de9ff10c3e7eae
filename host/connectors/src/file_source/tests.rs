use std::path::Path;
use std::sync::Arc;

use super::*;
use serde_json::json;
use weir_engine::LocalCheckpointStore;

#[test]
fn batches_take_files_up_to_the_byte_budget_and_at_least_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    // Five files of 100, 100, 300, 50 and 50 bytes, in name order.
    for (i, n) in [100, 100, 300, 50, 50].into_iter().enumerate() {
        let line = format!("{}\n", "x".repeat(n - 1));
        std::fs::write(input.join(format!("{i}.txt")), line).unwrap();
    }
    let batches = plan(&input, 250);
    let mut ends = vec![];
    let mut at = Offset::of(&json!(0));
    for (end, records) in batches {
        let read: usize = records.iter().map(|r| r.2.len()).sum();
        let files =
            Position::from_offset(&end).unwrap().files - Position::from_offset(&at).unwrap().files;
        assert!(read <= 250 || files == 1, "{read} bytes in {files} files");
        ends.push(end.clone());
        at = end;
    }
    // 100 + 100; 300 alone (over the budget, but one file always goes);
    // 50 + 50.
    assert_eq!(
        ends,
        vec![
            Offset::of(&json!(2)),
            Offset::of(&json!(3)),
            Offset::of(&json!(5))
        ]
    );
}

/// A record as (file, line, value).
type Line = (u32, i64, String);

fn lines(batches: Vec<RecordBatch>) -> Vec<Line> {
    let mut out = vec![];
    for b in batches {
        for i in 0..b.len() {
            let v = String::from_utf8(b.get(i).value.to_vec()).unwrap();
            out.push((b.partition, b.offsets()[i], v));
        }
    }
    out
}

/// Every batch a source over `input` plans with `budget`, from the start:
/// its end offset and its records.
fn plan(input: &Path, budget: u64) -> Vec<(Offset, Vec<Line>)> {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
    let mut s = FileSource::new(input.to_path_buf(), LineFormat::Raw, None)
        .with_max_bytes_per_trigger(budget);
    s.attach(SourceCheckpoint {
        store,
        dir: "sources/0".into(),
    })
    .unwrap();
    let latest = s.latest_offset().unwrap();
    let mut out = vec![];
    let mut at = Offset::of(&json!(0));
    while at != latest {
        let end = s.next_end(&at, &latest).unwrap();
        assert_ne!(end, at, "no progress at {at}");
        let records = lines(s.read(&at, &end).unwrap());
        // A re-run of the same range (read from the file, not from what
        // planning read) gives the same records.
        assert_eq!(lines(s.read(&at, &end).unwrap()), records);
        out.push((end.clone(), records));
        at = end;
    }
    out
}

#[test]
fn a_file_over_the_budget_is_split_at_line_boundaries_and_numbered_on() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    // File 0: 100 lines of 10 bytes; file 1: 3 lines.
    let lines: String = (0..100).map(|i| format!("line {i:04}\n")).collect();
    std::fs::write(input.join("a.txt"), &lines).unwrap();
    std::fs::write(input.join("b.txt"), "x\ny\nz\n").unwrap();
    let batches = plan(&input, 250);
    let mut all = vec![];
    for (end, records) in &batches {
        let bytes: usize = records.iter().map(|r| r.2.len() + 1).sum();
        assert!(bytes <= 250, "{bytes} bytes in the batch ending at {end}");
        all.extend(records.iter().cloned());
    }
    // Every line once, in order, with its own line number.
    let want: Vec<Line> = (0..100)
        .map(|i| (0, i as i64 + 1, format!("line {i:04}")))
        .chain([(1, 1, "x".into()), (1, 2, "y".into()), (1, 3, "z".into())])
        .collect();
    assert_eq!(all, want);
    // 25 lines a batch, and the offset says where the first one stopped;
    // file 0's last 25 lines fill the fourth batch, file 1 is the fifth.
    assert_eq!(batches.len(), 5);
    assert_eq!(
        batches[0].0,
        Offset::of(&json!({"files": 0, "byte": 250, "line": 25}))
    );
    assert_eq!(
        batches[2].0,
        Offset::of(&json!({"files": 0, "byte": 750, "line": 75}))
    );
    assert_eq!(batches[3].0, Offset::of(&json!(1)));
    assert_eq!(batches[4].0, Offset::of(&json!(2)));
}

#[test]
fn a_line_longer_than_the_budget_is_a_batch_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let long = "L".repeat(500);
    std::fs::write(input.join("a.txt"), format!("a\n{long}\nb\nc\n")).unwrap();
    let got: Vec<Vec<String>> = plan(&input, 100)
        .into_iter()
        .map(|(_, r)| r.into_iter().map(|(_, _, v)| v).collect())
        .collect();
    assert_eq!(
        got,
        vec![
            vec!["a".to_string()],
            vec![long],
            vec!["b".into(), "c".into()]
        ]
    );
}

#[test]
fn offsets_of_whole_files_keep_the_old_shape() {
    assert_eq!(Position::whole(3).to_offset(), Offset::of(&json!(3)));
    assert_eq!(
        Position::from_offset(&Offset::of(&json!(3))).unwrap(),
        Position::whole(3)
    );
    let p = Position {
        files: 2,
        byte: 40,
        line: 4,
    };
    assert_eq!(Position::from_offset(&p.to_offset()).unwrap(), p);
    assert!(Position::from_offset(&Offset::of(&json!({"files": 1}))).is_err());
}

#[test]
fn a_batch_fills_its_budget_across_a_file_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let lines =
        |tag: &str, n: usize| -> String { (0..n).map(|i| format!("{tag} {i:07}\n")).collect() };
    std::fs::write(input.join("a.txt"), lines("a", 100)).unwrap();
    std::fs::write(input.join("b.txt"), lines("b", 30)).unwrap();
    let batches = plan(&input, 240);
    // 24 lines of 10 bytes a batch: four from a, then a's last 4 with b's
    // first 20, then b's last 10.
    let sizes: Vec<usize> = batches.iter().map(|(_, r)| r.len()).collect();
    assert_eq!(sizes, vec![24, 24, 24, 24, 24, 10]);
    assert_eq!(
        batches[4].0,
        Offset::of(&json!({"files": 1, "byte": 200, "line": 20}))
    );
    let b4: Vec<&Line> = batches[4].1.iter().collect();
    assert_eq!((b4[0].0, b4[0].1), (0, 97));
    assert_eq!((b4[4].0, b4[4].1, b4[4].2.as_str()), (1, 1, "b 0000000"));
}
