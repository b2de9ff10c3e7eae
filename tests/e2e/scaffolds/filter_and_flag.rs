//! The life cycle's edit step: the scaffold's transform replaced by the
//! JSON filter-and-flag a newcomer writes first (drop `amount < 10`, add
//! `"big": true` at 1000 and over, refuse what is not a JSON object), as
//! the examples README points to write it, then built, tested against an
//! expectation, run over files by `weir run` and deployed to a spawned
//! `weir serve`.

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

/// The file to replace and its new text, in each language: the example
/// README teaches (`examples/<lang>/filter-and-flag/`), its Go imports
/// pointed at the project's module.
pub fn source(lang: &str, project_name: &str) -> (&'static str, String) {
    let (file, example) = match lang {
        "rust" => ("src/lib.rs", "lib.rs"),
        "python" => ("app.py", "app.py"),
        "js" => ("app.js", "app.js"),
        "go" => ("main.go", "main.go"),
        "c" => ("src/transform.c", "transform.c"),
        _ => panic!("no filter-and-flag in {lang}"),
    };
    let path = testkit::repo_root()
        .join("examples")
        .join(lang)
        .join("filter-and-flag")
        .join(example);
    let text = std::fs::read_to_string(&path).unwrap();
    (
        file,
        text.replace(
            "example.com/golden/",
            &format!("example.com/{project_name}/"),
        ),
    )
}

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
    // `weir run` files -> files, as the README's pipelines do; the refused
    // record goes to the dead-letter sink with its error.
    let run = testkit::run_files_to_files(
        &project.join("run"),
        lang,
        &project.join(component),
        &(INPUT.join("\n") + "\n"),
    );
    let mut got: Vec<&str> = run.output.lines().collect();
    got.sort();
    let mut want = EXPECTED.to_vec();
    want.sort();
    assert_eq!(got, want, "{lang}");
    assert_eq!(
        run.dead_letters.lines().count(),
        1,
        "{lang}: {}",
        run.dead_letters
    );
    assert!(
        run.dead_letters.contains("not json"),
        "{lang}: {}",
        run.dead_letters
    );
    super::deploy_to_serve(lang, project, component, &INPUT, &EXPECTED);
}
