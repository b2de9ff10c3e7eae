//! A transform that fails on one record, in Rust, Go, Python and
//! JavaScript: the failure names the user's own file and line (a Rust
//! panic's location, a Go panic's first user frame, a Python traceback's
//! last user frame, a JS stack's first user frame) in the dead letter, in
//! `weir test` and in `weir run`'s log, once, and without colour codes
//! when stderr is not a terminal.

use std::path::{Path, PathBuf};

use crate::testkit::{self, weir};

/// The failing transform in `lang`: records other than `boom` are
/// uppercased; `boom` fails inside `helper`, on the line marked `HERE`.
fn source(lang: &str, name: &str) -> (&'static str, String) {
    match lang {
        "rust" => (
            "src/lib.rs",
            r#"use weir_guest::{Output, Record, RecordError};

fn helper(text: &str) -> String {
    panic!("cannot handle {text}"); // HERE
}

fn transform(record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    let text = record.value_str()?;
    out.emit(if text == "boom" { helper(text) } else { text.to_uppercase() });
    Ok(())
}

weir_guest::flat_map!(transform);
"#
            .to_string(),
        ),
        "go" => (
            "main.go",
            r#"package main

import (
	"bytes"

	"example.com/NAME/weir"
)

func helper() []byte {
	var counts map[string]int
	counts["boom"]++ // HERE
	return nil
}

func shout(r *weir.Record) ([]byte, error) {
	if string(r.Value) == "boom" {
		return helper(), nil
	}
	return bytes.ToUpper(r.Value), nil
}

func init() { weir.Map(shout) }

func main() {}
"#
            .replace("NAME", name),
        ),
        "python" => (
            "app.py",
            r#"import weir


def helper(doc):
    return doc["missing"]  # HERE


@weir.map
def shout(record):
    if record.value == b"boom":
        return helper({})
    return record.value.upper()
"#
            .to_string(),
        ),
        "js" => (
            "app.js",
            r#"import * as weir from "./weir/index.js";

function helper(doc) {
  return doc.missing.field; // HERE
}

weir.map((record) => (record.text === "boom" ? helper({}) : record.text.toUpperCase()));
"#
            .to_string(),
        ),
        _ => panic!("{lang}"),
    }
}

/// `weir new` + the failing source + `weir build`; the project, and
/// `file:line` of the `HERE` line.
fn project(dir: &Path, lang: &str) -> (PathBuf, String) {
    testkit::polyglot_tools(lang);
    let name = format!("fails_{lang}");
    let cmd = |args: &[&str], cwd: &Path| {
        testkit::rust_guest_build(weir().args(args).current_dir(cwd))
            .output()
            .unwrap()
    };
    let o = cmd(&["new", "--lang", lang, &name], dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let project = dir.join(&name);
    let (file, text) = source(lang, &name);
    let line = text.lines().position(|l| l.contains("HERE")).unwrap() + 1;
    std::fs::write(project.join(file), &text).unwrap();
    let o = cmd(&["build"], &project);
    assert!(
        o.status.success(),
        "{lang}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Go names files by module path (weir builds with -trimpath).
    let shown = match lang {
        "go" => format!("example.com/{name}/{file}:{line}"),
        _ => format!("{file}:{line}"),
    };
    (project, shown)
}

fn check(lang: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (project, at) = project(dir.path(), lang);
    let component = project.join(format!("fails_{lang}.wasm"));
    std::fs::write(project.join("in.txt"), "hello\nboom\nweir\n").unwrap();
    let grant: Vec<&str> = testkit::grants(lang)
        .iter()
        .flat_map(|g| ["--grant", g])
        .collect();

    // weir test: the refusal names the place, once; no colour codes.
    let o = weir()
        .arg("test")
        .arg(&component)
        .args(["--input", "in.txt"])
        .args(&grant)
        .current_dir(&project)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "HELLO\nWEIR\n",
        "{lang}"
    );
    let refusal = err
        .lines()
        .find(|l| l.starts_with("line 2: "))
        .unwrap_or_else(|| panic!("{lang}: no refusal of line 2 in {err}"));
    assert!(
        refusal.contains(&at),
        "{lang}: {refusal} does not name {at}"
    );
    assert_eq!(
        err.matches(&at).count(),
        1,
        "{lang}: named more than once: {err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "{lang}: colour codes into a pipe: {err}"
    );

    // weir run with a dead-letter sink: the dead letter carries it too, and
    // the log names it once (the batch's failed call and the isolating
    // retry do not both print the guest's report).
    let run = testkit::run_files_to_files(
        &project.join("run"),
        lang,
        &component,
        "hello\nboom\nweir\n",
    );
    assert!(
        !run.log.contains('\u{1b}'),
        "{lang}: colour codes into a pipe: {}",
        run.log
    );
    assert!(
        run.log.matches(&at).count() <= 1,
        "{lang}: named more than once: {}",
        run.log
    );
    assert_eq!(
        run.dead_letters.lines().count(),
        1,
        "{lang}: {}",
        run.dead_letters
    );
    let letter: serde_json::Value = serde_json::from_str(run.dead_letters.trim()).unwrap();
    let message = letter["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&at), "{lang}: dead letter {letter}");
}

#[test]
fn a_rust_panic_names_the_users_file_and_line() {
    check("rust");
}

#[test]
fn a_go_panic_names_the_users_file_and_line() {
    check("go");
}

#[test]
fn a_python_exception_names_the_users_file_and_line() {
    check("python");
}

#[test]
fn a_js_exception_names_the_users_file_and_line() {
    check("js");
}

/// `on-error = "fail"` stops the run on the first refused record and says
/// where it is as the user finds it: the input file and its line, not the
/// file's index among those the source listed.
#[test]
fn a_failing_record_is_named_by_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    // Two files, so the bad record's is not the first one listed.
    std::fs::write(input.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(input.join("b.txt"), "three\nbad\nfour\n").unwrap();
    let spec = format!(
        "checkpoint = \"ckpt\"\n[[source]]\ntype = \"files\"\npath = \"in\"\nformat = \"raw\"\n\
         [transform]\ncomponent = \"{}\"\non-error = \"fail\"\n\
         [sink.default]\ntype = \"files\"\npath = \"out\"\n[trigger]\ntype = \"available-now\"\n",
        testkit::guest("misbehave").display()
    );
    std::fs::write(dir.path().join("p.toml"), spec).unwrap();
    let o = weir()
        .args(["run", "p.toml", "--progress", "none"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{log}");
    let place = format!("{}, line 2", input.join("b.txt").display());
    assert!(
        log.contains(&format!("bad record at {place}"))
            && log.contains("this record is bad on purpose"),
        "{log}"
    );
}
