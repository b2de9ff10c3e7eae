//! JavaScript guests: the SDK (`guest-sdk/js/weir`, compiled into weir and
//! written into each project by `weir new`) plus the user's `app.js`, made
//! a component by componentize-js (SpiderMonkey). Its entry is the SDK's
//! `weir/entry.js`, which imports `app.js`, so the user's code only
//! registers functions.

use std::path::Path;
use std::process::Command;

use super::BuildError;

/// The world JavaScript guests are built for: batch and per-record calls.
pub const WORLD: &str = "record-transformer";
/// The componentize-js release the SDK is tested with.
pub const COMPONENTIZE_JS: &str = "0.23.0";

/// The SDK's files, as written into a project's `weir/` directory.
pub const SDK: &[(&str, &str)] = &[
    (
        "columns.js",
        include_str!("../../../guest-sdk/js/weir/columns.js"),
    ),
    (
        "entry.js",
        include_str!("../../../guest-sdk/js/weir/entry.js"),
    ),
    (
        "errors.js",
        include_str!("../../../guest-sdk/js/weir/errors.js"),
    ),
    (
        "host.js",
        include_str!("../../../guest-sdk/js/weir/host.js"),
    ),
    (
        "index.d.ts",
        include_str!("../../../guest-sdk/js/weir/index.d.ts"),
    ),
    (
        "index.js",
        include_str!("../../../guest-sdk/js/weir/index.js"),
    ),
    (
        "record.js",
        include_str!("../../../guest-sdk/js/weir/record.js"),
    ),
    (
        "register.js",
        include_str!("../../../guest-sdk/js/weir/register.js"),
    ),
    ("run.js", include_str!("../../../guest-sdk/js/weir/run.js")),
    (
        "testing.js",
        include_str!("../../../guest-sdk/js/weir/testing.js"),
    ),
];

/// componentize-js: `$WEIR_COMPONENTIZE_JS`, else the one on PATH.
fn componentize_js() -> String {
    std::env::var("WEIR_COMPONENTIZE_JS").unwrap_or_else(|_| "componentize-js".into())
}

/// Build the project in `dir` (its `app.js` and `weir/`) into a component
/// at `out`.
pub fn compile(dir: &Path, out: &Path) -> Result<(), BuildError> {
    let wit = tempfile::tempdir().map_err(|err| BuildError::Io {
        path: std::env::temp_dir(),
        err,
    })?;
    let wit_file = wit.path().join("transform.wit");
    std::fs::write(&wit_file, super::WIT).map_err(|err| BuildError::Io {
        path: wit_file.clone(),
        err,
    })?;
    let tool = componentize_js();
    // No wasi:http: pipelines do not grant it.
    let output = Command::new(&tool)
        .arg(dir.join("weir/entry.js"))
        .arg("-w")
        .arg(wit.path())
        .args(["-n", WORLD, "-d", "http", "fetch-event", "-o"])
        .arg(out)
        .output()
        .map_err(|e| {
            BuildError::Toolchain(format!(
                "running {tool}: {e}; install it with `npm install @bytecodealliance/componentize-js@{COMPONENTIZE_JS}` (or set WEIR_COMPONENTIZE_JS)"
            ))
        })?;
    if !output.status.success() || !out.exists() {
        return Err(BuildError::Toolchain(format!(
            "{tool} failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout).trim_end(),
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    Ok(())
}
