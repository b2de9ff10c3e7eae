//! A property: whatever strings and numbers a pipeline file holds (from an
//! adversarial set: `..`, `/`, absolute paths, NUL, unicode, huge and
//! negative numbers, a symlink leading out), a PUT of it never touches a
//! sentinel tree outside the tenant's root nor brings its contents in, and
//! the server keeps answering.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::{Victim, put};
use crate::serve::Server;

const MARKER: &str = "weir-sentinel-7f3a";

fn strings(sentinel: &str) -> Vec<String> {
    [
        "log",
        "in",
        "out",
        "..",
        "../..",
        ".",
        "",
        "a/b",
        "a\\b",
        "a\0b",
        "caf\u{e9}",
        "\u{1f4a5}",
        "link",
        "link/x",
        "../alice/log",
        "../../sentinel",
        "/etc/passwd",
        "/proc/self/environ",
        "C:\\x",
        "-",
        "~",
        "$HOME",
        "%2e%2e",
        "line\nbreak",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        sentinel.to_string(),
        format!("{sentinel}/x"),
        "x".repeat(300),
    ])
    .collect()
}

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "\"1\"",
    "nan",
];

const DURATIONS: &[&str] = &["0s", "1ns", "1ms", "100000d", "-1s", "\"\"", "1y"];

/// Each slot's harmless value: a file of these runs, so the property
/// covers started pipelines as well as refused files.
const GOOD_TEXTS: [&str; 7] = ["log", "in", "c", "log", "log", "out", "dead"];
const GOOD_NUMBERS: [&str; 3] = ["10", "1", "10"];

/// One pipeline file from slot choices; `None` is the slot's harmless value
/// (nine times in ten).
#[derive(Debug, Clone)]
struct Slots {
    source: usize,
    texts: [Option<usize>; 7],
    numbers: [Option<usize>; 3],
    duration: Option<usize>,
}

/// Case `case`'s file: its harmless checkpoint and dead-letter directory
/// are its own (a query's checkpoint and file output are not shared).
fn file(s: &Slots, texts: &[String], component: &str, case: usize) -> String {
    // TOML's own quoting: NUL, backslashes and unicode reach the parser as
    // the values they are.
    let t = |i: usize| {
        let v = match s.texts[i] {
            Some(k) => texts[k % texts.len()].clone(),
            None if i == 2 || i == 6 => format!("{}-{case}", GOOD_TEXTS[i]),
            None => GOOD_TEXTS[i].to_string(),
        };
        toml::Value::String(v).to_string()
    };
    let n = |i: usize| s.numbers[i].map_or(GOOD_NUMBERS[i], |k| NUMBERS[k % NUMBERS.len()]);
    let d = s.duration.map_or("1s", |k| DURATIONS[k % DURATIONS.len()]);
    let source = match s.source % 3 {
        0 => format!(
            "type = \"log\"\npath = {}\ntopic = {}\nmax-records-per-trigger = {}",
            t(0),
            t(1),
            n(0)
        ),
        1 => format!(
            "type = \"files\"\npath = {}\nmax-files-per-trigger = {}",
            t(0),
            n(0)
        ),
        _ => format!(
            "type = \"rate\"\nrows-per-second = {}\npartitions = {}",
            n(0),
            n(1)
        ),
    };
    format!(
        "checkpoint = {}\n[[source]]\n{source}\n[transform]\ncomponent = \"{component}\"\non-error = \"dead-letter\"\n[transform.limits]\ncall-timeout = \"{d}\"\nmax-outputs-per-record = {}\n[transform.sandbox]\ndirs = {{ \"/ref\" = {} }}\n[sink.default]\ntype = \"log\"\npath = {}\ntopic = {}\npartitions = {}\n[sink.dead-letter]\ntype = \"files\"\npath = {}\n",
        t(2),
        n(2),
        t(3),
        t(4),
        t(5),
        n(1),
        t(6),
    )
}

#[test]
fn no_pipeline_file_reaches_outside_its_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let sentinel = dir.path().join("sentinel");
    std::fs::create_dir_all(sentinel.join("x")).unwrap();
    std::fs::write(sentinel.join("secret"), MARKER).unwrap();
    std::fs::write(sentinel.join("x/secret"), MARKER).unwrap();
    let s = Server::start(&data, &[]);
    let mut alice = Victim::start(&s, &data);
    let mallory = s.tenant("mallory");
    let id = s.upload(&mallory, "uppercase");
    // A symlink inside the root that leads out (as if a bug had made one).
    let root = data.join("tenants/mallory");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&sentinel, root.join("link")).unwrap();
    super::append_values(&root.join("log"), &["x"]);
    let texts = strings(&sentinel.display().to_string());
    let before = std::fs::read_dir(&sentinel).unwrap().count();
    let took = std::cell::RefCell::new(Vec::new());
    let accepted = std::cell::Cell::new(0);
    let slot = |n: usize| prop::option::weighted(0.1, 0..n);
    let strategy = (
        0..3usize,
        prop::array::uniform7(slot(64)),
        prop::array::uniform3(slot(16)),
        slot(8),
    )
        .prop_map(|(source, texts, numbers, duration)| Slots {
            source,
            texts,
            numbers,
            duration,
        });
    let mut runner = TestRunner::new(Config {
        cases: 128,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |slots| {
            let case = took.borrow().len();
            let text = file(&slots, &texts, &id, case);
            let (st, v) = put(&s, &mallory, "probe", &text);
            prop_assert!(st == 201 || st == 400 || st == 403, "{st} {v}\n{text}");
            prop_assert!(!v.to_string().contains(MARKER), "{v}");

            if st == 201 {
                accepted.set(accepted.get() + 1);
                let (st, v) = s.call(
                    "DELETE",
                    "/v1/pipelines/probe?purge=true",
                    Some(&mallory),
                    None,
                );
                prop_assert_eq!(st, 204, "{}", v);
            }
            let t = Instant::now();
            let (st, _) = s.call("GET", "/v1/whoami", Some(&mallory), None);
            took.borrow_mut().push(t.elapsed());
            prop_assert_eq!(st, 200);
            Ok(())
        })
        .unwrap();
    // The sentinel tree is as it was, and nothing of it came in.
    assert_eq!(std::fs::read_dir(&sentinel).unwrap().count(), before);
    assert_eq!(
        std::fs::read_to_string(sentinel.join("secret")).unwrap(),
        MARKER
    );
    for f in files_not_following_links(&data) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(MARKER),
            "{} holds the sentinel's contents",
            f.display()
        );
    }
    let mut took = took.into_inner();
    let accepted = accepted.get();
    took.sort();
    let p99 = took[took.len() * 99 / 100];
    eprintln!(
        "{accepted} of {} files accepted; API p99 {p99:?}",
        took.len()
    );
    assert!(p99 < Duration::from_millis(50), "API p99 {p99:?}");
    alice.send(10);
    alice.assert_flowing();
}

/// Regular files under `dir`; symlinks are neither followed nor listed.
fn files_not_following_links(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            out.extend(files_not_following_links(&e.path()));
        } else if kind.is_file() {
            out.push(e.path());
        }
    }
    out
}
