//! JavaScript guests: the SDK (`guest-sdk/js/weir`, compiled into weir and
//! written into each project by `weir new`) plus the user's `app.js`, made
//! a component by componentize-js (SpiderMonkey). Its entry is the SDK's
//! `weir/entry.js`, which imports `app.js`, so the user's code only
//! registers functions.

use std::path::Path;

use super::GuestBuildError;

/// The world JavaScript guests are built for: batch and per-record calls.
pub const WORLD: &str = "record-transformer";
/// The world of a stateful JavaScript guest (see
/// [`super::python::STATEFUL_WORLD`] for why it is chosen per app).
pub const STATEFUL_WORLD: &str = "full-transformer";
/// The componentize-js release the SDK is tested with.
pub const COMPONENTIZE_JS: &str = "0.23.0";
/// The WASI shim componentize-js imports at run time without declaring it.
pub const PREVIEW2_SHIM: &str = "0.17.9";

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
        "entry_stateful.js",
        include_str!("../../../guest-sdk/js/weir/entry_stateful.js"),
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
    (
        "joins.d.ts",
        include_str!("../../../guest-sdk/js/weir/joins.d.ts"),
    ),
    (
        "joins.js",
        include_str!("../../../guest-sdk/js/weir/joins.js"),
    ),
    (
        "json.js",
        include_str!("../../../guest-sdk/js/weir/json.js"),
    ),
    (
        "keys.js",
        include_str!("../../../guest-sdk/js/weir/keys.js"),
    ),
    ("run.js", include_str!("../../../guest-sdk/js/weir/run.js")),
    (
        "state.js",
        include_str!("../../../guest-sdk/js/weir/state.js"),
    ),
    (
        "testing.js",
        include_str!("../../../guest-sdk/js/weir/testing.js"),
    ),
    (
        "windows.d.ts",
        include_str!("../../../guest-sdk/js/weir/windows.d.ts"),
    ),
    (
        "windows.js",
        include_str!("../../../guest-sdk/js/weir/windows.js"),
    ),
];

/// Whether an app uses keyed state: it imports `./weir/state.js`,
/// `./weir/windows.js` or `./weir/joins.js` (which keep windows and rows
/// in state).
pub fn stateful(app: &str) -> bool {
    app.lines().map(str::trim_start).any(|l| {
        l.starts_with("import")
            && ["weir/state.js", "weir/windows.js", "weir/joins.js"]
                .iter()
                .any(|m| l.contains(m))
    })
}

/// Build the project in `dir` (its `app.js` and `weir/`) into a component
/// at `out`: stateful when `app.js` imports the state, windows or joins module.
pub fn compile(
    dir: &Path,
    out: &Path,
    tools: &super::toolchain::Toolchains,
) -> Result<(), GuestBuildError> {
    let app = dir.join("app.js");
    let text =
        std::fs::read_to_string(&app).map_err(|err| GuestBuildError::Io { path: app, err })?;
    super::syntax_check(dir, "node", &["--check", "app.js"], &[])?;
    let (world, entry) = if stateful(&text) {
        (STATEFUL_WORLD, "weir/entry_stateful.js")
    } else {
        (WORLD, "weir/entry.js")
    };
    // The project's `node_modules`, where `npm install` puts the
    // componentize-js its package.json pins.
    let tool = super::packager(
        "WEIR_COMPONENTIZE_JS",
        dir,
        "node_modules/.bin/componentize-js",
        || tools.componentize_js(),
    )?;
    super::run_packager(
        &tool,
        &format!("componentize-js {COMPONENTIZE_JS}: `weir doctor js` says what is missing"),
        |c, wit| {
            // No wasi:http: pipelines do not grant it.
            c.arg(dir.join(entry))
                .arg("-w")
                .arg(wit)
                .args(["-n", world, "-d", "http", "fetch-event", "-o"])
                .arg(out);
        },
    )?;
    if !out.exists() {
        return Err(GuestBuildError::Toolchain(format!(
            "{tool} wrote no {}",
            out.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_app_is_stateful_when_it_imports_the_state_module() {
        assert!(super::stateful(
            "import * as state from \"./weir/state.js\";"
        ));
        assert!(super::stateful("  import { get } from './weir/state.js';"));
        assert!(super::stateful(
            "import * as windows from \"./weir/windows.js\";"
        ));
        assert!(!super::stateful(
            "// weir/state.js is not imported\nimport * as weir from \"./weir/index.js\";"
        ));
    }
}
