//! `weir build [DIR]`: turn a guest project into a component with the
//! language's own toolchain, then check it as `weir validate` does. Rust:
//! `cargo build --release --target wasm32-wasip2` (which emits a component
//! directly); the result is copied to `DIR/<name>.wasm`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, bail};
use weir::runtime::Runtime;

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

pub fn run(runtime: &Runtime, a: Args) -> anyhow::Result<ExitCode> {
    let manifest = a.dir.join("Cargo.toml");
    if !manifest.exists() {
        bail!(
            "{}: no Cargo.toml; weir build knows Rust projects (as `weir new --lang rust` makes them)",
            a.dir.display()
        );
    }
    let name = crate_name(&manifest)?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .current_dir(&a.dir)
        .status()
        .with_context(|| format!("running {cargo} (is Rust installed?)"))?;
    if !status.success() {
        bail!(
            "cargo build failed (see above); is the target installed? `rustup target add wasm32-wasip2`"
        );
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| a.dir.join("target"));
    let built = target
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    let out = a.dir.join(format!("{name}.wasm"));
    std::fs::copy(&built, &out).with_context(|| format!("copying {}", built.display()))?;
    let component = runtime
        .load(&out, &[])
        .with_context(|| format!("{} is not a weir transform", out.display()))?;
    let info = component.info();
    println!(
        "built {} ({} bytes{})",
        out.display(),
        info.size,
        if info.stateful { ", stateful" } else { "" }
    );
    Ok(ExitCode::SUCCESS)
}
