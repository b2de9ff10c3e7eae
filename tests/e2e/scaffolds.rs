//! `weir new` -> native unit test -> `weir build` -> `weir validate` ->
//! `weir test` from an empty directory, for each language whose project
//! weir scaffolds beside Rust's (which `guest_test` covers).

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
    // The language's compiler to a core module, then weir's component step.
    let o = weir().arg("build").current_dir(&project).output().unwrap();
    assert!(o.status.success(), "{lang}: {}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("built ./up.wasm"));
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
    deploy_to_serve(lang, &project, "up.wasm");
    // A compile error comes back as the compiler's own message.
    std::fs::write(project.join(broken.0), broken.1).unwrap();
    let o = weir().arg("build").current_dir(&project).output().unwrap();
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

/// The built component deployed to a spawned `weir serve` with `weir
/// deploy`, as a user would: the tenant is allowed what the language's
/// runtime imports (CPython: wasi:sockets), the pipeline grants it, and
/// records go through.
pub(crate) fn deploy_to_serve(lang: &str, project: &std::path::Path, component: &str) {
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
    crate::serve::pipelines::append_values(&log, &["hello", "weir"]);
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
    assert_eq!(out, ["HELLO", "WEIR"], "{lang}");
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
