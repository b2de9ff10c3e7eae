//! The life cycle of a guest project from an empty directory, for each
//! language weir scaffolds beside Rust's (which `guest_test` covers):
//! `weir new` -> native unit test -> `weir build` (Python and JavaScript
//! with an empty tools cache, so weir installs their componentizers) ->
//! `weir validate` -> `weir test` -> edit to a JSON filter -> build, test,
//! `weir run`, deploy to a spawned `weir serve`.

pub(crate) mod filter_and_flag;
mod templates;

use std::path::Path;
use std::process::{Command, Output};

use crate::testkit::{self, weir};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `weir new` -> `weir build` -> `weir validate` -> `weir test` for a
/// language whose core module weir makes a component itself.
fn new_build_test(lang: &str, own_file: &str, broken: (&str, &str)) {
    testkit::polyglot_tools(lang);
    let dir = tempfile::tempdir().unwrap();
    let o = weir()
        .args(["new", "--lang", lang, "up"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let project = dir.path().join("up");
    for f in [
        ".gitignore",
        "README.md",
        own_file,
        "sample/input.txt",
        "sample/expected.txt",
    ] {
        assert!(project.join(f).exists(), "{lang}: {f}");
    }
    // Each language's own project file pins its componentizer.
    let pins = match lang {
        "python" => Some(("pyproject.toml", "componentize-py==")),
        "js" => Some(("package.json", "@bytecodealliance/componentize-js")),
        _ => None,
    };
    if let Some((file, pin)) = pins {
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(text.contains(pin), "{lang}: {file} does not pin {pin}");
    }
    // The scaffold's unit test, natively.
    let unit = match lang {
        "python" => Some(("python3", ["-m", "pytest", "-q"].as_slice())),
        "js" => Some(("node", ["--test"].as_slice())),
        "go" => Some(("go", ["test", "./..."].as_slice())),
        "c" => Some(("make", ["test"].as_slice())),
        _ => None,
    };
    if let Some((tool, args)) = unit {
        let o = Command::new(tool)
            .args(args)
            .current_dir(&project)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{lang}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // The language's compiler to a core module, then weir's component
    // step. Python's and JavaScript's componentizers are not installed yet
    // (an empty tools cache, no WEIR_COMPONENTIZE_*), and Go's builds see
    // no `go` on PATH, so weir installs them.
    let tools = tempfile::tempdir().unwrap();
    let build = || {
        let mut c = weir();
        c.arg("build")
            .current_dir(&project)
            .env_remove("WEIR_COMPONENTIZE_PY")
            .env_remove("WEIR_COMPONENTIZE_JS")
            .env("WEIR_TOOLCHAINS_DIR", tools.path());
        if lang == "go" {
            c.env("PATH", path_without("go"));
        }
        c.output().unwrap()
    };
    let o = build();
    assert!(o.status.success(), "{lang}: {}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("built ./up.wasm"));
    let installed = match lang {
        "python" => Some("weir: installing componentize-py"),
        "js" => Some("weir: installing componentize-js"),
        "go" => Some("weir: installing Go"),
        _ => None,
    };
    if let Some(line) = installed {
        assert_eq!(
            stderr(&o).matches(line).count(),
            1,
            "{lang}: {}",
            stderr(&o)
        );
    }
    // CPython's runtime imports wasi:sockets.
    let grant: Vec<&str> = testkit::grants(lang)
        .iter()
        .flat_map(|g| ["--grant", g])
        .collect();
    let o = weir()
        .args(["validate", "up.wasm"])
        .args(&grant)
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(o.status.success(), "{lang}: {}", stderr(&o));
    let o = weir()
        .args([
            "test",
            "up.wasm",
            "--input",
            "sample/input.txt",
            "--expect",
            "sample/expected.txt",
        ])
        .args(&grant)
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(o.status.success(), "{lang}: {}", stderr(&o));
    // Both call paths, and a bad record refused with its line.
    std::fs::write(project.join("mixed.txt"), "héllo\n\nweir\n").unwrap();
    for extra in [None, Some("--per-record")] {
        let mut args = vec!["test", "up.wasm", "--input", "mixed.txt"];
        args.extend(extra);
        args.extend(&grant);
        let o = weir().args(&args).current_dir(&project).output().unwrap();
        assert!(o.status.success(), "{lang}: {}", stderr(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "HéLLO\nWEIR\n",
            "{lang} {extra:?}"
        );
        assert!(
            stderr(&o).contains("line 2: bad-record: empty record"),
            "{}",
            stderr(&o)
        );
    }
    filter_and_flag::edit_build_test_run_deploy(lang, &project, "up.wasm", build);
    // A compile error comes back as the compiler's own message.
    std::fs::write(project.join(broken.0), broken.1).unwrap();
    let o = build();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(broken.0.rsplit('/').next().unwrap()),
        "{}",
        stderr(&o)
    );
    // The component of the build before is gone, so nothing runs old code.
    assert!(!project.join("up.wasm").exists(), "{lang}: a stale up.wasm");
    let o = weir()
        .args(["test", "up.wasm", "--input", "sample/input.txt"])
        .args(&grant)
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "{lang}: weir test ran a stale component"
    );
}

/// `$PATH` without the directories that hold `program`.
fn path_without(program: &str) -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::env::split_paths(&path).filter(|d| !d.join(program).exists()))
        .unwrap()
}

/// The built component deployed to a spawned `weir serve` with `weir
/// deploy`, as a user would: the tenant is allowed what the language's
/// runtime imports (CPython: wasi:sockets), the pipeline grants it, and
/// `input` comes out as `expected` (in any order).
pub(crate) fn deploy_to_serve(
    lang: &str,
    project: &Path,
    component: &str,
    input: &[&str],
    expected: &[&str],
) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = crate::serve::Server::start(&data, &[]);
    let grants: Vec<&str> = testkit::grants(lang).to_vec();
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(crate::serve::Body::Json(
            serde_json::json!({"name": "dev", "grants": grants}),
        )),
    );
    assert_eq!(st, 201, "{v}");
    let token = v["token"].as_str().unwrap().to_string();
    let log = data.join("tenants/dev/log");
    crate::serve::pipelines::append_values(&log, input);
    let file = project.join("deploy.toml");
    std::fs::write(
        &file,
        format!(
            "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{component}\"\n{}[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n",
            testkit::grants_line(lang)
        ),
    )
    .unwrap();
    let o = weir()
        .args(["deploy", file.to_str().unwrap()])
        .env("WEIR_SERVER", &s.base)
        .env("WEIR_TOKEN", &token)
        .output()
        .unwrap();
    assert!(o.status.success(), "{lang}: {}", stderr(&o));
    s.wait_committed(&token, "deploy", 0);
    let mut out = testkit::topic_values(&log, "out").unwrap();
    out.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(out, want, "{lang}");
}

#[test]
fn weir_new_build_and_test_work_from_an_empty_directory_in_c() {
    new_build_test("c", "src/transform.c", ("src/broken.c", "int broken( {"));
}

#[test]
fn weir_new_build_and_test_work_from_an_empty_directory_in_python() {
    new_build_test(
        "python",
        "app.py",
        ("app.py", "import weir\n@weir.map\ndef broken(:\n"),
    );
}

#[test]
fn weir_new_build_and_test_work_from_an_empty_directory_in_js() {
    new_build_test(
        "js",
        "app.js",
        (
            "app.js",
            "import * as weir from \"./weir/index.js\";\nweir.map((r) => {;\n",
        ),
    );
}

#[test]
fn weir_new_build_and_test_work_from_an_empty_directory_in_go() {
    new_build_test(
        "go",
        "main.go",
        ("broken.go", "package main\nfunc broken( {"),
    );
}

#[test]
fn weir_doctor_reports_every_language_and_names_the_fix() {
    let tools = tempfile::tempdir().unwrap();
    let doctor = |args: &[&str], envs: &[(&str, &str)]| {
        let mut c = weir();
        c.arg("doctor")
            .args(args)
            .env("WEIR_TOOLCHAINS_DIR", tools.path());
        for (k, v) in envs {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let o = doctor(&[], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let status = |lang: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(lang))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_else(|| panic!("no {lang} line in {out}"))
            .to_string()
    };
    // The suite's machine has Rust with the target, C and Go (installed by
    // scripts/test); the componentizers are not in an empty cache.
    for lang in ["rust", "c", "go"] {
        assert_eq!(status(lang), "ready", "{out}");
    }
    for lang in ["python", "js"] {
        assert_eq!(status(lang), "install", "{out}");
    }
    // Named languages that are not ready fail the command, for scripts.
    assert!(!doctor(&["python"], &[]).status.success());
    assert!(doctor(&["rust", "go"], &[]).status.success());
    // C cannot be installed by weir: the line says what to run.
    let o = doctor(&["c"], &[("CC", "/nonexistent/clang")]);
    assert!(!o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("missing"), "{out}");
    assert!(
        out.contains("apt-get install clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32"),
        "{out}"
    );
}
