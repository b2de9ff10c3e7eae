//! Every SDK carries a record's key, headers and absence of value through a
//! map, on both call paths: each language's `weir new` scaffold (an
//! uppercasing map) over an embedded-log topic whose records have keys,
//! headers and tombstones, through `weir run`, read back field by field.

use std::path::Path;

use weir_engine::{RecordBatch, RecordRef};
use weir_log::Topic;

use crate::testkit::{self, run_command, run_ok, scaffold};

/// (key, value, headers) of every committed record of `topic`.
type Row = (Option<String>, Option<String>, Vec<(String, String)>);

fn rows(log: &Path, topic: &str) -> Vec<Row> {
    let mut t = Topic::open(log, topic).unwrap();
    let mut out = Vec::new();
    for (p, end) in t.committed_ends().unwrap().into_iter().enumerate() {
        let mut b = RecordBatch::new(p as u32);
        t.read(p as u32, 0, end, &mut b).unwrap();
        for r in b.iter() {
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            out.push((
                r.key.map(text),
                r.value_opt().map(text),
                r.headers().map(|(n, v)| (n.to_string(), text(v))).collect(),
            ));
        }
    }
    out.sort();
    out
}

fn check(lang: &str) {
    let dir = tempfile::tempdir().unwrap();
    let component = scaffold(dir.path(), lang, "keys", None);
    let log = dir.path().join("log");
    let mut t = Topic::create(&log, "in", 1).unwrap();
    let mut b = RecordBatch::new(0);
    b.push_with_headers(Some(b"k1"), b"one", &[("trace", b"7"), ("h", b"")], 1, 0);
    b.push_record(&RecordRef::new(Some(b"k2"), None, &[], 2, 1));
    b.push(None, b"three", 3, 2);
    b.push_with_headers(Some(b""), b"four", &[("x", b"y")], 4, 3);
    t.append(None, &[b], || {}).unwrap();
    let s = |v: &str| Some(v.to_string());
    let h = |n: &str, v: &str| (n.to_string(), v.to_string());
    let mut expected: Vec<Row> = vec![
        (s("k1"), s("ONE"), vec![h("trace", "7"), h("h", "")]),
        (s("k2"), None, vec![]),
        (None, s("THREE"), vec![]),
        (s(""), s("FOUR"), vec![h("x", "y")]),
    ];
    expected.sort();
    let grants = testkit::grants_line(lang);
    for call in ["batch", "record"] {
        let run = dir.path().join(call);
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(
            run.join("p.toml"),
            format!(
                "checkpoint = \"ckpt\"\n[[source]]\ntype = \"log\"\npath = \"../log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{}\"\ncall = \"{call}\"\n{grants}[sink.default]\ntype = \"log\"\npath = \"../log\"\ntopic = \"out-{call}\"\npartitions = 1\n[trigger]\ntype = \"available-now\"\n",
                component.display()
            ),
        )
        .unwrap();
        run_ok(run_command(&run, None));
        assert_eq!(
            rows(&log, &format!("out-{call}")),
            expected,
            "{lang}, call = {call}"
        );
    }
}

#[test]
fn the_c_sdk_keeps_keys_headers_and_tombstones() {
    check("c");
}

#[test]
fn the_go_sdk_keeps_keys_headers_and_tombstones() {
    check("go");
}

#[test]
fn the_python_sdk_keeps_keys_headers_and_tombstones() {
    check("python");
}

#[test]
fn the_js_sdk_keeps_keys_headers_and_tombstones() {
    check("js");
}
