//! The Rust target guests are built for, added with rustup when missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Readiness, Toolchains};
use crate::build::GuestBuildError;

const TARGET: &str = "wasm32-wasip2";

fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

/// Whether rustc (as run in `dir`, which may pin a toolchain) has the
/// standard library for the target: its target library directory exists.
fn target_installed(dir: &Path) -> bool {
    Command::new(rustc())
        .args(["--print", "target-libdir", "--target", TARGET])
        .current_dir(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .is_some_and(|libdir| libdir.is_dir())
}

pub(super) fn ensure_target(tools: &Toolchains, dir: &Path) -> Result<(), GuestBuildError> {
    if target_installed(dir) {
        return Ok(());
    }
    if super::first_line(Path::new("rustup"), &["--version"]).is_none() {
        return Err(GuestBuildError::Toolchain(format!(
            "rustc has no {TARGET} standard library and there is no rustup to add it: install Rust with rustup (https://rustup.rs), then `rustup target add {TARGET}`"
        )));
    }
    (tools.progress)(&format!(
        "adding the Rust target {TARGET} (rustup target add {TARGET})"
    ));
    super::run_step(
        Command::new("rustup")
            .args(["target", "add", TARGET])
            .current_dir(dir),
        &format!("rustup target add {TARGET}"),
    )
}

pub(super) fn readiness() -> Readiness {
    let here = Path::new(".");
    let Some(version) = super::first_line(Path::new(&rustc()), &["--version"]) else {
        return Readiness::Missing("no rustc: install Rust with rustup (https://rustup.rs)".into());
    };
    if target_installed(here) {
        Readiness::Ready(format!("{version}, target {TARGET}"))
    } else if super::first_line(Path::new("rustup"), &["--version"]).is_some() {
        Readiness::Installable(format!(
            "{version}; the {TARGET} target is added with rustup on the first build"
        ))
    } else {
        Readiness::Missing(format!(
            "{version} has no {TARGET} target and there is no rustup: install Rust with rustup (https://rustup.rs)"
        ))
    }
}
