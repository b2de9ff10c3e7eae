//! componentize-js, pinned by a lockfile compiled into weir, installed with
//! `npm ci` so every machine gets the same packages.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Readiness, Toolchains};
use crate::build::GuestBuildError;
use crate::build::js::COMPONENTIZE_JS;

const PACKAGE_JSON: &str = include_str!("componentize-js/package.json");
const PACKAGE_LOCK: &str = include_str!("componentize-js/package-lock.json");

fn name() -> String {
    format!("componentize-js-{COMPONENTIZE_JS}")
}

fn tool(dir: &Path) -> PathBuf {
    dir.join("node_modules/.bin/componentize-js")
}

pub(super) fn componentize_js(tools: &Toolchains) -> Result<PathBuf, GuestBuildError> {
    let what = format!("componentize-js {COMPONENTIZE_JS} (from npm)");
    let dir = tools.install(&name(), &what, |dir| {
        for (file, text) in [
            ("package.json", PACKAGE_JSON),
            ("package-lock.json", PACKAGE_LOCK),
        ] {
            let path = dir.join(file);
            std::fs::write(&path, text).map_err(|err| GuestBuildError::Io { path, err })?;
        }
        super::run_step(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(dir),
            &format!("installing {what} (needs Node.js 18+ and npm)"),
        )
    })?;
    Ok(tool(&dir))
}

pub(super) fn readiness(tools: &Toolchains) -> Readiness {
    let Some(node) = super::first_line(Path::new("node"), &["--version"]) else {
        return Readiness::Missing(
            "no node: install Node.js 18+ with npm (on Debian: apt-get install nodejs npm)".into(),
        );
    };
    if super::first_line(Path::new("npm"), &["--version"]).is_none() {
        return Readiness::Missing(format!(
            "node {node} but no npm: install npm (on Debian: apt-get install npm)"
        ));
    }
    match tools.installed(&name()) {
        Some(dir) => Readiness::Ready(format!(
            "node {node}; componentize-js {COMPONENTIZE_JS} at {}",
            tool(&dir).display()
        )),
        None => Readiness::Installable(format!(
            "node {node}; componentize-js {COMPONENTIZE_JS} is installed from npm on the first build"
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_lockfile_pins_the_version_the_sdk_is_tested_with() {
        let lock: serde_json::Value = serde_json::from_str(super::PACKAGE_LOCK).unwrap();
        let pinned = &lock["packages"]["node_modules/@bytecodealliance/componentize-js"]["version"];
        assert_eq!(pinned, super::COMPONENTIZE_JS);
        let shim = &lock["packages"]["node_modules/@bytecodealliance/preview2-shim"]["version"];
        assert_eq!(shim, crate::build::js::PREVIEW2_SHIM);
        assert!(super::PACKAGE_JSON.contains(super::COMPONENTIZE_JS));
    }
}
