//! `weir build [DIR]`: turn a guest project into a component with the
//! language's own toolchain, then check it as `weir validate` does. Rust
//! (a `Cargo.toml`): `cargo build --release --target wasm32-wasip2`, which
//! emits a component directly. C (`weir/full_transformer.h` and `src/*.c`, as
//! `weir new --lang c` makes them) and Go (`go.mod`): the language's
//! compiler to a core module, then weir's own component step
//! ([`weir::build`]). Python (`app.py`) and JavaScript (`app.js`):
//! componentize-py and componentize-js, which bundle their language's
//! runtime. The result is `DIR/<name>.wasm`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use super::Lang;
use anyhow::{Context, bail};
use weir::build::toolchain::Toolchains;
use weir_runtime::Runtime;

#[derive(clap::Args)]
pub struct Args {
    /// The project directory (default: the current one).
    #[arg(default_value = ".")]
    dir: PathBuf,
}

/// The crate's name from its Cargo.toml (`-` becomes `_` in the artifact).
fn crate_name(manifest: &Path) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(manifest).with_context(|| format!("{}", manifest.display()))?;
    let t: toml::Table = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", manifest.display(), e.message()))?;
    t.get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .with_context(|| format!("{}: no [package] name", manifest.display()))
}

/// A project's language, by the file that marks it.
fn language(dir: &Path) -> anyhow::Result<Lang> {
    let c_header = dir.join(format!("weir/{}.h", weir::build::c::STEM));
    Ok(if dir.join("Cargo.toml").exists() {
        Lang::Rust
    } else if c_header.exists() {
        Lang::C
    } else if dir.join("go.mod").exists() {
        Lang::Go
    } else if dir.join("app.py").exists() {
        Lang::Python
    } else if dir.join("app.js").exists() {
        Lang::Js
    } else {
        bail!(
            "{}: not a Rust (Cargo.toml), C (weir/{}.h), Go (go.mod), Python (app.py) or JavaScript (app.js) project; start one with `weir new`",
            dir.display(),
            weir::build::c::STEM
        );
    })
}

pub fn run(runtime: &Runtime, a: Args) -> anyhow::Result<ExitCode> {
    let manifest = a.dir.join("Cargo.toml");
    let language = language(&a.dir)?;
    let name = match language {
        Lang::Rust => crate_name(&manifest)?,
        _ => dir_name(&a.dir)?,
    };
    // A build that fails must not leave the previous component behind for
    // `weir test` and `weir run` to pick up as if it were this code's.
    let out = a.dir.join(format!("{name}.wasm"));
    match std::fs::remove_file(&out) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing the old {}", out.display()));
        }
        _ => {}
    }
    let tools = toolchains()?;
    // What the guest's language runtime imports beyond the defaults.
    let mut grants = Vec::new();
    match language {
        Lang::Rust => rust(&a.dir, &name, &out, &tools)?,
        Lang::C => c(&a.dir, &name, &out)?,
        Lang::Go => go(&a.dir, &name, &out, &tools)?,
        Lang::Python => {
            grants.push(weir::build::python::GRANT.to_string());
            let dir = std::fs::canonicalize(&a.dir)?;
            weir::build::python::compile(&dir, &absolute(&out)?, &tools)?;
        }
        Lang::Js => {
            let dir = std::fs::canonicalize(&a.dir)?;
            weir::build::js::compile(&dir, &absolute(&out)?, &tools)?;
        }
    }
    let component = runtime
        .load(&out, &grants)
        .with_context(|| format!("{} is not a weir transform", out.display()))?;
    let info = component.info();
    println!(
        "built {} ({} bytes{})",
        out.display(),
        info.size,
        if info.stateful { ", stateful" } else { "" }
    );
    for g in &grants {
        println!(
            "note: its language runtime imports {g}: pipelines need grants = [\"{g}\"] (`weir test --grant {g}`); the network stays off"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// weir's tools cache (`weir doctor` shows where), announcing installs on
/// stderr.
pub(crate) fn toolchains() -> anyhow::Result<Toolchains> {
    let root = Toolchains::default_root()
        .context("no HOME, XDG_CACHE_HOME or WEIR_TOOLCHAINS_DIR for weir's tools cache")?;
    Ok(Toolchains::new(root, |line| eprintln!("weir: {line}")))
}

/// The project's name: its directory's.
fn dir_name(dir: &Path) -> anyhow::Result<String> {
    let abs = std::fs::canonicalize(dir).with_context(|| format!("{}", dir.display()))?;
    abs.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .context("the project directory has no name")
}

/// `out` in the project's canonical directory (componentize-py and -js
/// run elsewhere).
fn absolute(out: &Path) -> anyhow::Result<PathBuf> {
    let dir = out.parent().context("an output path has a directory")?;
    let file = out.file_name().context("an output path has a file name")?;
    Ok(std::fs::canonicalize(dir)?.join(file))
}

fn c(dir: &Path, name: &str, out: &Path) -> anyhow::Result<()> {
    let mut sources = vec![
        dir.join(format!("weir/{}.c", weir::build::c::STEM)),
        dir.join(format!("weir/{}_component_type.c", weir::build::c::STEM)),
    ];
    // The SDK's sources, in projects made since it exists.
    for (file, _) in weir::build::c::SDK {
        let path = dir.join("weir").join(file);
        if file.ends_with(".c") && path.exists() {
            sources.push(path);
        }
    }
    let src = dir.join("src");
    let mut own: Vec<PathBuf> = std::fs::read_dir(&src)
        .with_context(|| format!("{}", src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    own.sort();
    if own.is_empty() {
        bail!("{}: no .c files", src.display());
    }
    sources.extend(own);
    let target = dir.join("target");
    std::fs::create_dir_all(&target)?;
    let core = target.join(format!("{name}.core.wasm"));
    weir::build::c::compile(&sources, &dir.join("weir"), &core)?;
    let module = std::fs::read(&core)?;
    let component =
        weir::build::componentize(&module, &core.display().to_string(), weir::build::c::WORLD)?;
    std::fs::write(out, component).with_context(|| format!("{}", out.display()))
}

fn go(dir: &Path, name: &str, out: &Path, tools: &Toolchains) -> anyhow::Result<()> {
    let target = dir.join("target");
    std::fs::create_dir_all(&target)?;
    // Absolute: go build runs in the project directory.
    let core = std::fs::canonicalize(&target)?.join(format!("{name}.core.wasm"));
    weir::build::go::compile(dir, &core, tools)?;
    let module = weir::build::go::adapter_realloc(&std::fs::read(&core)?)?;
    let component =
        weir::build::componentize(&module, &core.display().to_string(), weir::build::go::WORLD)?;
    std::fs::write(out, component).with_context(|| format!("{}", out.display()))
}

fn rust(dir: &Path, name: &str, out: &Path, tools: &Toolchains) -> anyhow::Result<()> {
    tools.rust_target(dir)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .current_dir(dir)
        .status()
        .with_context(|| format!("running {cargo} (is Rust installed?)"))?;
    if !status.success() {
        bail!("cargo build failed (see above)");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target"));
    let built = target
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    std::fs::copy(&built, out).with_context(|| format!("copying {}", built.display()))?;
    Ok(())
}
