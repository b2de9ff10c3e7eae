//! `weir new --template filter|window|join` in every language, as a user
//! starts one: the project's own unit test passes in the language's runner,
//! `weir build` builds it, and the `weir test` command `weir new` printed
//! gives the sample's expected output through the real runtime (windows
//! and joins with keyed state and event time). The map template is the
//! life cycle's (`super`).

use std::path::Path;
use std::process::{Command, Output};

use crate::testkit::{self, weir};

const TEMPLATES: [&str; 3] = ["filter", "window", "join"];

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The language's own test runner in the project; how many tests passed,
/// where the runner says.
fn unit_test(lang: &str, project: &Path) -> Output {
    let mut c = match lang {
        "rust" => {
            let mut c = Command::new("cargo");
            c.args(["test", "--lib"]);
            testkit::rust_guest_build(&mut c);
            c
        }
        "python" => {
            let mut c = Command::new("python3");
            c.args(["-m", "pytest", "-q"]);
            c
        }
        "js" => {
            let mut c = Command::new("node");
            c.arg("--test");
            c
        }
        "go" => {
            let mut c = Command::new("go");
            c.args(["test", "-v", "."]);
            c
        }
        _ => {
            let mut c = Command::new("make");
            c.arg("test");
            c
        }
    };
    c.current_dir(project).output().unwrap()
}

/// Whether the runner's output shows at least one test that ran and passed.
fn ran_tests(lang: &str, out: &str) -> bool {
    match lang {
        "rust" => out.contains("test result: ok.") && !out.contains("ok. 0 passed"),
        "python" => out.contains(" passed"),
        "js" => out.contains("# pass ") && !out.contains("# pass 0"),
        "go" => out.contains("--- PASS: "),
        _ => out.lines().any(|l| l == "ok"),
    }
}

/// mypy (installed with the test tools) accepts the template as written,
/// and the SDK's hints catch a function that does not fit its decorator.
fn type_check_python(project: &Path, template: &str) {
    let mypy = testkit::tools_dir().join("venv/bin/mypy");
    let o = Command::new(&mypy)
        .args(["app.py", "test_app.py"])
        .current_dir(project)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mypy on the {template} template: {}",
        text(&o)
    );
    if template == "filter" {
        std::fs::write(
            project.join("wrong.py"),
            "import weir\n\n\n@weir.filter\ndef keep(record: weir.Record) -> str:\n    return record.text\n",
        )
        .unwrap();
        let o = Command::new(&mypy)
            .arg("wrong.py")
            .current_dir(project)
            .output()
            .unwrap();
        assert!(
            !o.status.success() && text(&o).contains("wrong.py:4: error"),
            "a filter returning str passed mypy: {}",
            text(&o)
        );
        std::fs::remove_file(project.join("wrong.py")).unwrap();
    }
}

fn templates_in(lang: &str) {
    testkit::polyglot_tools(lang);
    let dir = tempfile::tempdir().unwrap();
    for template in TEMPLATES {
        let name = format!("{lang}-{template}");
        let o = weir()
            .args(["new", "--lang", lang, "--template", template, &name])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", text(&o));
        let printed = String::from_utf8_lossy(&o.stdout).into_owned();
        let command = printed
            .split("&& weir build && ")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no test command in {printed:?}"))
            .trim()
            .to_string();
        let project = dir.path().join(&name);
        let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
        assert!(readme.contains(&command), "{name}: README lacks {command}");

        let o = unit_test(lang, &project);
        let out = text(&o);
        assert!(o.status.success(), "{name} unit test: {out}");
        assert!(ran_tests(lang, &out), "{name}: no test ran: {out}");

        if lang == "python" {
            type_check_python(&project, template);
        }

        let mut build = weir();
        build.arg("build").current_dir(&project);
        if lang == "rust" {
            testkit::rust_guest_build(&mut build);
        }
        let o = build.output().unwrap();
        assert!(o.status.success(), "{name} build: {}", text(&o));

        // The printed command, word by word (no argument has a space).
        let args: Vec<&str> = command.split(' ').collect();
        assert_eq!(args[0], "weir", "{command}");
        let o = weir()
            .args(&args[1..])
            .current_dir(&project)
            .output()
            .unwrap();
        let expected = args
            .windows(2)
            .find(|w| w[0] == "--expect")
            .map(|w| std::fs::read_to_string(project.join(w[1])).unwrap())
            .unwrap_or_else(|| panic!("{command} has no --expect"));
        let lines = expected.lines().count();
        assert!(lines >= 2, "{name}: a sample that shows nothing");
        assert!(
            o.status.success()
                && String::from_utf8_lossy(&o.stderr)
                    .contains(&format!("ok: {lines} output record(s) as expected")),
            "{name}: {command}: {}",
            text(&o)
        );
    }
}

#[test]
fn weir_new_templates_test_build_and_run_in_rust() {
    templates_in("rust");
}

#[test]
fn weir_new_templates_test_build_and_run_in_python() {
    templates_in("python");
}

#[test]
fn weir_new_templates_test_build_and_run_in_js() {
    templates_in("js");
}

#[test]
fn weir_new_templates_test_build_and_run_in_go() {
    templates_in("go");
}

#[test]
fn weir_new_templates_test_build_and_run_in_c() {
    templates_in("c");
}
