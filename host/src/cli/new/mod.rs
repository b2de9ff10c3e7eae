//! `weir new --lang LANG NAME`: scaffold a guest project with a README, a
//! sample input with its expected output, and a unit test, ready for
//! `weir build` and `weir test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use super::Lang;

mod rust_sdk;

#[derive(clap::Args)]
pub struct Args {
    /// The guest's language.
    #[arg(long, value_enum)]
    lang: Lang,
    /// The project's name, and its directory (created; must not exist).
    name: String,
    /// Depend on the Rust SDK (`guest-sdk`) at DIR instead of a copy in the
    /// project's `weir/` (for working on the SDK itself).
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
}

/// Crate and component names: what cargo and file names accept.
fn valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Write `files` (path under `dir`, contents), creating directories.
fn write_all(dir: &Path, files: Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    for (path, bytes) in files {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, bytes).with_context(|| format!("{}", p.display()))?;
    }
    Ok(())
}

/// Templates filled by `fill`, as files to write.
fn filled(templates: &[(&str, &str)], fill: impl Fn(&str) -> String) -> Vec<(String, Vec<u8>)> {
    templates
        .iter()
        .map(|(path, t)| (path.to_string(), fill(t).into_bytes()))
        .collect()
}

/// A `.gitignore` that keeps build output out of the repository: the
/// component and the build directory, plus `extra` (the language's own
/// caches).
fn gitignore(extra: &str) -> (String, Vec<u8>) {
    let text =
        format!("# Build output: `weir build` makes these again.\n/target/\n/*.wasm\n{extra}");
    (".gitignore".to_string(), text.into_bytes())
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    if !valid(&a.name) {
        bail!(
            "project name `{}`: use lowercase letters, digits, `-` and `_`, starting with a letter",
            a.name
        );
    }
    let dir = PathBuf::from(&a.name);
    if dir.exists() {
        bail!("{} exists already; pick another name", dir.display());
    }
    match a.lang {
        Lang::Rust => {}
        Lang::C => return c(&a.name, &dir),
        Lang::Go => return go(&a.name, &dir),
        Lang::Python => return python(&a.name, &dir),
        Lang::Js => return js(&a.name, &dir),
    }
    let sdk = match &a.sdk {
        Some(dir) => std::fs::canonicalize(dir)
            .with_context(|| format!("the Rust guest SDK at {}", dir.display()))?
            .display()
            .to_string(),
        None => rust_sdk::PATH.to_string(),
    };
    let fill = |t: &str| t.replace("{{name}}", &a.name).replace("{{sdk}}", &sdk);
    let files: [(&str, &str); 6] = [
        ("Cargo.toml", include_str!("scaffold/rust/Cargo.toml.tmpl")),
        ("src/lib.rs", include_str!("scaffold/rust/lib.rs.tmpl")),
        (
            ".cargo/config.toml",
            include_str!("scaffold/rust/cargo-config.toml.tmpl"),
        ),
        ("README.md", include_str!("scaffold/rust/README.md.tmpl")),
        (
            "sample/input.txt",
            include_str!("scaffold/rust/input.txt.tmpl"),
        ),
        (
            "sample/expected.txt",
            include_str!("scaffold/rust/expected.txt.tmpl"),
        ),
    ];
    let mut files = filled(&files, fill);
    if a.sdk.is_none() {
        files.extend(rust_sdk::files()?);
    }
    files.push(gitignore(""));
    write_all(&dir, files)?;
    Ok(created(&a.name, "Rust"))
}

/// A C project: the SDK and the generated bindings in `weir/`, the
/// transform in `src/transform.c`, its native unit test (`make test`), a
/// sample and a README.
fn c(name: &str, dir: &Path) -> anyhow::Result<ExitCode> {
    let fill = |t: &str| t.replace("{{name}}", name);
    let mut files = filled(
        &[
            (
                "src/transform.c",
                include_str!("scaffold/c/transform.c.tmpl"),
            ),
            (
                "test/transform_test.c",
                include_str!("scaffold/c/transform_test.c.tmpl"),
            ),
            ("Makefile", include_str!("scaffold/c/Makefile.tmpl")),
            ("README.md", include_str!("scaffold/c/README.md.tmpl")),
            (
                "sample/input.txt",
                include_str!("scaffold/rust/input.txt.tmpl"),
            ),
            (
                "sample/expected.txt",
                include_str!("scaffold/rust/expected.txt.tmpl"),
            ),
        ],
        fill,
    );
    for (file, bytes) in weir::build::c::bindings()? {
        files.push((format!("weir/{file}"), bytes));
    }
    for (file, text) in weir::build::c::SDK {
        files.push((format!("weir/{file}"), text.as_bytes().to_vec()));
    }
    files.push(gitignore(""));
    write_all(dir, files)?;
    Ok(created(name, "C"))
}

/// A Go project: `main.go` with the transform, package `weir/` with the
/// bindings, a sample and a README.
fn go(name: &str, dir: &Path) -> anyhow::Result<ExitCode> {
    let module = format!("example.com/{}", name.replace('-', "_"));
    let fill = |t: &str| t.replace("{{name}}", name).replace("{{module}}", &module);
    let mut files = filled(
        &[
            ("go.mod", include_str!("scaffold/go/go.mod.tmpl")),
            ("main.go", include_str!("scaffold/go/main.go.tmpl")),
            (
                "main_test.go",
                include_str!("scaffold/go/main_test.go.tmpl"),
            ),
            ("README.md", include_str!("scaffold/go/README.md.tmpl")),
            (
                "sample/input.txt",
                include_str!("scaffold/rust/input.txt.tmpl"),
            ),
            (
                "sample/expected.txt",
                include_str!("scaffold/rust/expected.txt.tmpl"),
            ),
        ],
        fill,
    );
    for (file, text) in weir::build::go::SDK {
        files.push((format!("weir/{file}"), text.as_bytes().to_vec()));
    }
    files.push(gitignore(""));
    write_all(dir, files)?;
    Ok(created(name, "Go"))
}

/// A Python project: `app.py` with the transform, its unit test, the SDK
/// in `weir/`, a sample and a README.
fn python(name: &str, dir: &Path) -> anyhow::Result<ExitCode> {
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{componentize_py}}", weir::build::python::COMPONENTIZE_PY)
    };
    let mut files = filled(
        &[
            ("app.py", include_str!("scaffold/python/app.py.tmpl")),
            (
                "test_app.py",
                include_str!("scaffold/python/test_app.py.tmpl"),
            ),
            (
                "pyproject.toml",
                include_str!("scaffold/python/pyproject.toml.tmpl"),
            ),
            ("README.md", include_str!("scaffold/python/README.md.tmpl")),
            (
                "sample/input.txt",
                include_str!("scaffold/rust/input.txt.tmpl"),
            ),
            (
                "sample/expected.txt",
                include_str!("scaffold/rust/expected.txt.tmpl"),
            ),
        ],
        fill,
    );
    for (file, text) in weir::build::python::SDK {
        files.push((format!("weir/{file}"), text.as_bytes().to_vec()));
    }
    files.push(gitignore("__pycache__/\n.pytest_cache/\n"));
    write_all(dir, files)?;
    println!(
        "created {name}/ (Python): cd {name} && weir build && weir test {name}.wasm --grant wasi:sockets --input sample/input.txt --expect sample/expected.txt"
    );
    Ok(ExitCode::SUCCESS)
}

/// A JavaScript project: `app.js` with the transform, its unit test, the
/// SDK in `weir/`, a sample and a README.
fn js(name: &str, dir: &Path) -> anyhow::Result<ExitCode> {
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{componentize_js}}", weir::build::js::COMPONENTIZE_JS)
            .replace("{{preview2_shim}}", weir::build::js::PREVIEW2_SHIM)
    };
    let mut files = filled(
        &[
            ("app.js", include_str!("scaffold/js/app.js.tmpl")),
            ("app.test.js", include_str!("scaffold/js/app.test.js.tmpl")),
            (
                "package.json",
                include_str!("scaffold/js/package.json.tmpl"),
            ),
            ("README.md", include_str!("scaffold/js/README.md.tmpl")),
            (
                "sample/input.txt",
                include_str!("scaffold/rust/input.txt.tmpl"),
            ),
            (
                "sample/expected.txt",
                include_str!("scaffold/rust/expected.txt.tmpl"),
            ),
        ],
        fill,
    );
    for (file, text) in weir::build::js::SDK {
        files.push((format!("weir/{file}"), text.as_bytes().to_vec()));
    }
    files.push(gitignore("node_modules/\n"));
    write_all(dir, files)?;
    Ok(created(name, "JavaScript"))
}

/// Say what was made and what to run next.
fn created(name: &str, lang: &str) -> ExitCode {
    println!(
        "created {name}/ ({lang}): cd {name} && weir build && weir test {name}.wasm --input sample/input.txt --expect sample/expected.txt"
    );
    ExitCode::SUCCESS
}
