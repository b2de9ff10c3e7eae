use std::sync::Arc;

use super::*;
use weir_engine::parallel::Workers;

#[test]
fn a_directory_belongs_to_one_query() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
    a.open("query-a").unwrap();
    a.open("query-a").unwrap();
    let mut b = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
    let err = b.open("query-b").unwrap_err().to_string();
    assert!(
        err.contains("holds the output of another query (id query-a)"),
        "{err}"
    );
    // A directory with manifests but no owner is not adopted either.
    std::fs::remove_file(dir.path().join("_weir/query")).unwrap();
    write_atomic(&manifest_path(dir.path(), 0), b"{}").unwrap();
    let err = b.open("query-b").unwrap_err().to_string();
    assert!(err.contains("cannot identify"), "{err}");
}

/// `n` parts of three records each; record `i` of part `p` has value
/// `p-i`, and part 1's second record goes to the output `other`.
fn parts(n: u32) -> Vec<(RecordBatch, TransformOutput)> {
    (0..n)
        .map(|p| {
            let mut input = RecordBatch::new(0);
            let mut out = TransformOutput::default();
            for i in 0..3u32 {
                let v = format!("{p}-{i}");
                input.push(None, v.as_bytes(), 0, i64::from(i));
                let route = (p == 1 && i == 1).then_some("other");
                out.batch.push(i, route, None, Some(v.as_bytes()), &[], 0);
            }
            (input, out)
        })
        .collect()
}

fn values(dir: &Path) -> Vec<String> {
    read_committed(dir)
        .unwrap()
        .into_iter()
        .map(|l| String::from_utf8(l).unwrap())
        .collect()
}

#[test]
fn a_batch_is_written_on_several_cores_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
    sink.use_workers(Arc::new(Workers::new(3, "test").unwrap()));
    sink.open("q").unwrap();
    let parts = parts(5);
    let batch = SinkBatch {
        parts: &parts,
        route: None,
    };
    assert_eq!(sink.add_batch(0, &batch).unwrap(), 14);
    let mut want = vec![];
    for p in 0..5 {
        for i in 0..3 {
            if !(p == 1 && i == 1) {
                want.push(format!("{p}-{i}"));
            }
        }
    }
    assert_eq!(values(dir.path()), want);
    let m: Manifest =
        serde_json::from_slice(&std::fs::read(manifest_path(dir.path(), 0)).unwrap()).unwrap();
    assert_eq!(
        m.files,
        [
            "part-00000000-000.jsonl",
            "part-00000000-001.jsonl",
            "part-00000000-002.jsonl"
        ]
    );
    // Replayed: already committed, nothing written twice.
    assert_eq!(sink.add_batch(0, &batch).unwrap(), 0);
    // One part fits one file, named after the batch alone; a route's
    // records go to that route's sink only.
    let other = SinkBatch {
        parts: &parts[1..2],
        route: Some("other"),
    };
    let mut routed = FileSink::new(dir.path().join("other"), FileFormat::Values);
    routed.open("q").unwrap();
    assert_eq!(routed.add_batch(0, &other).unwrap(), 1);
    assert_eq!(values(&dir.path().join("other")), ["1-1"]);
    assert!(dir.path().join("other/part-00000000.jsonl").exists());
}

#[test]
fn files_a_crash_left_are_removed_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
    sink.use_workers(Arc::new(Workers::new(2, "test").unwrap()));
    sink.open("q").unwrap();
    let parts = parts(2);
    let batch = SinkBatch {
        parts: &parts,
        route: None,
    };
    sink.add_batch(0, &batch).unwrap();
    // A run that crashed in batch 1 after writing its files on four
    // cores, and a temp file of one it had not renamed yet.
    for k in 0..4 {
        std::fs::write(
            dir.path().join(format!("part-00000001-{k:03}.jsonl")),
            "x\n",
        )
        .unwrap();
    }
    std::fs::write(dir.path().join(".tmpAbC"), "y").unwrap();
    let mut restarted = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
    restarted.open("q").unwrap();
    restarted.add_batch(1, &batch).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "_weir")
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "part-00000000-000.jsonl",
            "part-00000000-001.jsonl",
            "part-00000001.jsonl"
        ]
    );
    assert_eq!(values(dir.path()).len(), 10);
}
