//! The life cycle's edit step: the scaffold's transform replaced by the
//! JSON filter-and-flag a newcomer writes first (drop `amount < 10`, add
//! `"big": true` at 1000 and over, refuse what is not a JSON object), then
//! built, tested against an expectation, run over files by `weir run` and
//! deployed to a spawned `weir serve`.

use std::path::Path;

use crate::testkit::{self, weir};

/// Orders in, one line each; the last is not JSON.
pub const INPUT: [&str; 5] = [
    r#"{"id":1,"amount":5}"#,
    r#"{"id":2,"amount":50}"#,
    r#"{"id":3,"amount":1000}"#,
    r#"{"id":4,"amount":2500.5}"#,
    "not json",
];

/// What comes out, in input order.
pub const EXPECTED: [&str; 3] = [
    r#"{"id":2,"amount":50}"#,
    r#"{"id":3,"amount":1000,"big":true}"#,
    r#"{"id":4,"amount":2500.5,"big":true}"#,
];

/// The file to replace and its new text, in each language.
pub fn source(lang: &str, project_name: &str) -> (&'static str, String) {
    match lang {
        "rust" => ("src/lib.rs", RUST.to_string()),
        "python" => ("app.py", PYTHON.to_string()),
        "js" => ("app.js", JS.to_string()),
        "go" => ("main.go", GO.replace("{{name}}", project_name)),
        "c" => ("src/transform.c", C.to_string()),
        _ => panic!("no filter-and-flag in {lang}"),
    }
}

const RUST: &str = r##"use weir_guest::json::{self, Field};
use weir_guest::{Output, Record, RecordError};

fn filter_and_flag(record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
    let amount = match json::field(record.value(), "amount")? {
        Field::Int(i) => i as f64,
        Field::Float(f) => f,
        _ => return Err(RecordError::bad("amount is not a number")),
    };
    if amount < 10.0 {
        return Ok(());
    }
    let value = record.value();
    if amount >= 1000.0 {
        let mut flagged = value[..value.len() - 1].to_vec();
        flagged.extend_from_slice(br#","big":true}"#);
        out.emit(flagged);
    } else {
        out.emit(value);
    }
    Ok(())
}

weir_guest::flat_map!(filter_and_flag);
"##;

const PYTHON: &str = r#"import json

import weir


@weir.flat_map
def filter_and_flag(record, out):
    order = json.loads(record.value)
    if not isinstance(order, dict):
        raise weir.BadRecord("not a JSON object")
    if order["amount"] < 10:
        return
    if order["amount"] >= 1000:
        order["big"] = True
    out.emit(json.dumps(order, separators=(",", ":")))
"#;

const JS: &str = r#"import * as weir from "./weir/index.js";

weir.flatMap((record, out) => {
  const order = JSON.parse(record.text);
  if (order === null || typeof order !== "object") throw new weir.BadRecord("not a JSON object");
  if (order.amount < 10) return;
  if (order.amount >= 1000) order.big = true;
  out.emit(JSON.stringify(order));
});
"#;

const GO: &str = r#"package main

import "example.com/{{name}}/weir"

func filterAndFlag(r *weir.Record, out *weir.Output) error {
	field, err := weir.JSONField(r.Value, "amount")
	if err != nil {
		return err
	}
	amount, _ := field.Number()
	if amount < 10 {
		return nil
	}
	if amount >= 1000 {
		flagged := append([]byte{}, r.Value[:len(r.Value)-1]...)
		out.Emit(append(flagged, `,"big":true}`...))
		return nil
	}
	out.Emit(r.Value)
	return nil
}

func init() { weir.FlatMap(filterAndFlag) }

func main() {}
"#;

const C: &str = r#"#include <stdlib.h>
#include <string.h>

#include "weir.h"

static void filter_and_flag(const weir_record *r, weir_output *out) {
  weir_json_value field;
  double amount;
  if (weir_json_get(r->value, "amount", &field) != WEIR_JSON_FOUND || !weir_json_double(field, &amount)) {
    weir_bad(out, "not a JSON object with a number `amount`");
    return;
  }
  if (amount < 10) return;
  if (amount < 1000) {
    weir_emit(out, r->value.ptr, r->value.len);
    return;
  }
  static const char flag[] = ",\"big\":true}";
  size_t keep = r->value.len - 1;
  uint8_t *v = weir_emit_reserve(out, keep + sizeof(flag) - 1);
  if (!v) return;
  memcpy(v, r->value.ptr, keep);
  memcpy(v + keep, flag, sizeof(flag) - 1);
}

WEIR_FLAT_MAP(filter_and_flag)
"#;

/// Edit the project to the filter-and-flag, build it, `weir test` it
/// against the expectation, `weir run` it over files and deploy it; the
/// component is `component` in `project`.
pub fn edit_build_test_run_deploy(
    lang: &str,
    project: &Path,
    component: &str,
    build: impl Fn() -> std::process::Output,
) {
    let name = project.file_name().unwrap().to_str().unwrap();
    let (file, text) = source(lang, name);
    std::fs::write(project.join(file), text).unwrap();
    let o = build();
    assert!(o.status.success(), "{lang}: {}", super::stderr(&o));
    let grant: Vec<&str> = testkit::grants(lang)
        .iter()
        .flat_map(|g| ["--grant", g])
        .collect();
    std::fs::write(project.join("orders.jsonl"), INPUT.join("\n") + "\n").unwrap();
    std::fs::write(project.join("orders.expected"), EXPECTED.join("\n") + "\n").unwrap();
    let o = weir()
        .args(["test", component, "--input", "orders.jsonl"])
        .args(["--expect", "orders.expected"])
        .args(&grant)
        .current_dir(project)
        .output()
        .unwrap();
    assert!(o.status.success(), "{lang}: {}", super::stderr(&o));
    // The record that is not JSON is refused with its line, not dropped.
    assert!(
        super::stderr(&o).contains("line 5:"),
        "{lang}: {}",
        super::stderr(&o)
    );
    run_over_files(lang, project, component);
    super::deploy_to_serve(lang, project, component, &INPUT, &EXPECTED);
}

/// `weir run` files -> files, as the README's pipelines do; the refused
/// record goes to the dead-letter sink with its error.
fn run_over_files(lang: &str, project: &Path, component: &str) {
    let input = project.join("run/in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(project.join("orders.jsonl"), input.join("orders.jsonl")).unwrap();
    let pipeline = project.join("run/p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "checkpoint = \"ckpt\"\n[[source]]\ntype = \"files\"\npath = \"in\"\nformat = \"raw\"\n[transform]\ncomponent = \"../{component}\"\non-error = \"dead-letter\"\n{}[sink.default]\ntype = \"files\"\npath = \"out\"\n[sink.dead-letter]\ntype = \"files\"\npath = \"dead\"\nformat = \"records\"\n[trigger]\ntype = \"available-now\"\n",
            testkit::grants_line(lang)
        ),
    )
    .unwrap();
    let o = weir()
        .args(["run", "p.toml", "--progress", "none"])
        .current_dir(project.join("run"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{lang}: {}", super::stderr(&o));
    let files = |dir: &str| {
        let o = weir()
            .args(["files", dir])
            .current_dir(project.join("run"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{lang}: {}", super::stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let out = files("out");
    let mut got: Vec<&str> = out.lines().collect();
    got.sort();
    let mut want = EXPECTED.to_vec();
    want.sort();
    assert_eq!(got, want, "{lang}");
    let dead = files("dead");
    assert_eq!(dead.lines().count(), 1, "{lang}: {dead}");
    assert!(dead.contains("not json"), "{lang}: {dead}");
}
