//! `weir new --lang LANG [--template KIND] NAME`: scaffold a guest project
//! with a README, sample input with its expected output, and a unit test in
//! the language's own runner, ready for `weir build` and `weir test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use super::Lang;

mod rust_sdk;
mod template;

use template::Template;

#[derive(clap::Args)]
pub struct Args {
    /// The guest's language.
    #[arg(long, value_enum)]
    lang: Lang,
    /// What the transform starts as: map (uppercase values), filter (JSON
    /// orders of at least 10), window (counts per key in 10 s event-time
    /// windows) or join (orders with their payments within a minute).
    #[arg(long, value_enum, default_value = "map")]
    template: Template,
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

/// The template's transform, unit test and samples, filled by `fill`.
fn template_files(
    template: Template,
    lang: Lang,
    fill: impl Fn(&str) -> String,
) -> Vec<(String, Vec<u8>)> {
    let sources = template.sources(lang).iter().map(|f| (f.path, f.text));
    let samples = template.samples().iter().map(|f| (f.path, f.text));
    let all: Vec<(&str, &str)> = sources.chain(samples).collect();
    filled(&all, fill)
}

/// The command that checks the samples, as the README and `weir new` say it.
fn test_command(name: &str, lang: Lang, template: Template) -> String {
    let grant = if lang == Lang::Python {
        " --grant wasi:sockets"
    } else {
        ""
    };
    format!("weir test {name}.wasm{grant} {}", template.test_args())
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
    let test = test_command(&a.name, a.lang, a.template);
    let files = match a.lang {
        Lang::Rust => rust(&a, &test)?,
        Lang::C => c(&a.name, a.template, &test)?,
        Lang::Go => go(&a.name, a.template, &test),
        Lang::Python => python(&a.name, a.template, &test),
        Lang::Js => js(&a.name, a.template, &test),
    };
    write_all(&dir, files)?;
    println!("created {}/: cd {} && weir build && {test}", a.name, a.name);
    Ok(ExitCode::SUCCESS)
}

/// A Rust project: the crate, the SDK vendored into `weir/` (unless
/// `--sdk` points at one), and the build settings for wasm32-wasip2.
fn rust(a: &Args, test: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let sdk = match &a.sdk {
        Some(dir) => std::fs::canonicalize(dir)
            .with_context(|| format!("the Rust guest SDK at {}", dir.display()))?
            .display()
            .to_string(),
        None => rust_sdk::PATH.to_string(),
    };
    let deps = a.template.rust_dependencies();
    let fill = |t: &str| {
        t.replace("{{name}}", &a.name)
            .replace("{{sdk}}", &sdk)
            .replace("{{features}}", deps.features)
            .replace("{{crates}}", deps.crates)
            .replace("{{test}}", test)
    };
    let mut files = filled(
        &[
            ("Cargo.toml", include_str!("scaffold/rust/Cargo.toml.tmpl")),
            (
                ".cargo/config.toml",
                include_str!("scaffold/rust/cargo-config.toml.tmpl"),
            ),
            ("README.md", include_str!("scaffold/rust/README.md.tmpl")),
        ],
        fill,
    );
    files.extend(template_files(a.template, Lang::Rust, fill));
    if a.sdk.is_none() {
        files.extend(rust_sdk::files()?);
    }
    files.push(gitignore(""));
    Ok(files)
}

/// A project of a language that keeps the SDK in `weir/`: its own files
/// (`own`, filled), the template's transform, unit test and samples, the
/// SDK's files, and a `.gitignore` with `ignore` (the language's caches).
fn project(
    own: &[(&str, &str)],
    fill: impl Fn(&str) -> String,
    template: Template,
    lang: Lang,
    sdk: Vec<(String, Vec<u8>)>,
    ignore: &str,
) -> Vec<(String, Vec<u8>)> {
    let mut files = filled(own, &fill);
    files.extend(template_files(template, lang, &fill));
    files.extend(sdk.into_iter().map(|(f, b)| (format!("weir/{f}"), b)));
    files.push(gitignore(ignore));
    files
}

/// A C project: the SDK and the generated bindings in `weir/`, the
/// transform in `src/transform.c`, its native unit test (`make test`), a
/// sample and a README.
fn c(name: &str, template: Template, test: &str) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let fill = |t: &str| t.replace("{{name}}", name).replace("{{test}}", test);
    let mut sdk = weir::build::c::bindings()?;
    sdk.extend(filled(weir::build::c::SDK, str::to_string));
    Ok(project(
        &[
            ("Makefile", include_str!("scaffold/c/Makefile.tmpl")),
            ("README.md", include_str!("scaffold/c/README.md.tmpl")),
        ],
        fill,
        template,
        Lang::C,
        sdk,
        "",
    ))
}

/// A Go project: `main.go` with the transform, its test, package `weir/`
/// with the SDK and bindings (`weir/weirtest` for tests), a sample and a
/// README. The SDK's files and the examples the templates come from import
/// the SDK by its own path; the project's module path replaces it.
fn go(name: &str, template: Template, test: &str) -> Vec<(String, Vec<u8>)> {
    let module = format!("example.com/{}", name.replace('-', "_"));
    let import = format!("\"{module}/weir\"");
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{module}}", &module)
            .replace("{{test}}", test)
            .replace(weir::build::go::SDK_IMPORT, &import)
            .replace(EXAMPLE_GO_IMPORT, &import)
    };
    let sdk = filled(weir::build::go::SDK, fill);
    project(
        &[
            ("go.mod", include_str!("scaffold/go/go.mod.tmpl")),
            ("README.md", include_str!("scaffold/go/README.md.tmpl")),
        ],
        fill,
        template,
        Lang::Go,
        sdk,
        "",
    )
}

/// How the Go examples import the SDK: they are written for a project
/// named `golden`, as the golden suite builds them.
const EXAMPLE_GO_IMPORT: &str = "\"example.com/golden/weir\"";

/// A Python project: `app.py` with the transform, its unit test, the SDK
/// in `weir/`, a sample and a README.
fn python(name: &str, template: Template, test: &str) -> Vec<(String, Vec<u8>)> {
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{componentize_py}}", weir::build::python::COMPONENTIZE_PY)
            .replace("{{test}}", test)
    };
    project(
        &[
            (
                "pyproject.toml",
                include_str!("scaffold/python/pyproject.toml.tmpl"),
            ),
            ("README.md", include_str!("scaffold/python/README.md.tmpl")),
        ],
        fill,
        template,
        Lang::Python,
        filled(weir::build::python::SDK, str::to_string),
        "__pycache__/\n.pytest_cache/\n",
    )
}

/// A JavaScript project: `app.js` with the transform, its unit test, the
/// SDK in `weir/`, a sample and a README.
fn js(name: &str, template: Template, test: &str) -> Vec<(String, Vec<u8>)> {
    let fill = |t: &str| {
        t.replace("{{name}}", name)
            .replace("{{componentize_js}}", weir::build::js::COMPONENTIZE_JS)
            .replace("{{preview2_shim}}", weir::build::js::PREVIEW2_SHIM)
            .replace("{{test}}", test)
    };
    project(
        &[
            (
                "package.json",
                include_str!("scaffold/js/package.json.tmpl"),
            ),
            ("README.md", include_str!("scaffold/js/README.md.tmpl")),
        ],
        fill,
        template,
        Lang::Js,
        filled(weir::build::js::SDK, str::to_string),
        "node_modules/\n",
    )
}
