//! Python guests: the SDK (`guest-sdk/python/weir`, compiled into weir and
//! written into each project by `weir new`) plus the user's `app.py`,
//! made a component by componentize-py, which bundles CPython. weir hands
//! it the contract and the SDK's entry module, so the user's code only
//! registers functions.

use std::path::Path;

use super::GuestBuildError;

/// The world Python guests are built for: batch and per-record calls.
pub const WORLD: &str = "record-transformer";
/// The world of a stateful Python guest: componentize-py links every import
/// of the world it builds for, and importing keyed state makes a component
/// stateful, so only apps that use `weir.state` are built for it.
pub const STATEFUL_WORLD: &str = "full-transformer";
/// What CPython's runtime imports beyond weir's default grants. The
/// sandbox has no network, so the grant links the interface and nothing
/// more (SECURITY.md).
pub const GRANT: &str = "wasi:sockets";
/// The componentize-py release the SDK is tested with.
pub const COMPONENTIZE_PY: &str = "0.25.1";

/// The SDK's files, as written into a project's `weir/` package.
pub const SDK: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../../guest-sdk/python/weir/__init__.py"),
    ),
    (
        "_batch.py",
        include_str!("../../../guest-sdk/python/weir/_batch.py"),
    ),
    (
        "_columns.py",
        include_str!("../../../guest-sdk/python/weir/_columns.py"),
    ),
    (
        "_entry.py",
        include_str!("../../../guest-sdk/python/weir/_entry.py"),
    ),
    (
        "_entry_stateful.py",
        include_str!("../../../guest-sdk/python/weir/_entry_stateful.py"),
    ),
    (
        "_errors.py",
        include_str!("../../../guest-sdk/python/weir/_errors.py"),
    ),
    (
        "_host.py",
        include_str!("../../../guest-sdk/python/weir/_host.py"),
    ),
    (
        "_json.py",
        include_str!("../../../guest-sdk/python/weir/_json.py"),
    ),
    (
        "_register.py",
        include_str!("../../../guest-sdk/python/weir/_register.py"),
    ),
    (
        "_run.py",
        include_str!("../../../guest-sdk/python/weir/_run.py"),
    ),
    (
        "state.py",
        include_str!("../../../guest-sdk/python/weir/state.py"),
    ),
    (
        "windows.py",
        include_str!("../../../guest-sdk/python/weir/windows.py"),
    ),
    (
        "joins.py",
        include_str!("../../../guest-sdk/python/weir/joins.py"),
    ),
    (
        "testing.py",
        include_str!("../../../guest-sdk/python/weir/testing.py"),
    ),
];

/// Whether an app uses keyed state: it imports `weir.state` or
/// `weir.windows` or `weir.joins` (which keep windows and rows in state).
pub fn stateful(app: &str) -> bool {
    const MODULES: [&str; 3] = ["state", "windows", "joins"];
    app.lines().map(str::trim_start).any(|l| {
        MODULES.iter().any(|m| {
            l.starts_with(&format!("import weir.{m}")) || l.starts_with(&format!("from weir.{m} "))
        }) || (l.starts_with("from weir import ")
            && l.split([' ', ',']).any(|w| MODULES.contains(&w)))
    })
}

/// Build the project in `dir` (its `app.py` and `weir/` package) into a
/// component at `out`: stateful when `app.py` imports `weir.state` or
/// `weir.windows`. componentize-py: see [`super::packager`].
pub fn compile(
    dir: &Path,
    out: &Path,
    tools: &super::toolchain::Toolchains,
) -> Result<(), GuestBuildError> {
    let app = dir.join("app.py");
    let text =
        std::fs::read_to_string(&app).map_err(|err| GuestBuildError::Io { path: app, err })?;
    // Compiled bytecode goes to a scratch directory, not the project.
    let cache = tempfile::tempdir().map_err(|err| GuestBuildError::Io {
        path: std::env::temp_dir(),
        err,
    })?;
    super::syntax_check(
        dir,
        "python3",
        &["-m", "py_compile", "app.py"],
        &[("PYTHONPYCACHEPREFIX", cache.path())],
    )?;
    let (world, entry) = if stateful(&text) {
        (STATEFUL_WORLD, "weir._entry_stateful")
    } else {
        (WORLD, "weir._entry")
    };
    super::run_packager(
        // The project's `.venv`, where its pyproject.toml's `dev` extra
        // installs componentize-py.
        &super::packager(
            "WEIR_COMPONENTIZE_PY",
            dir,
            ".venv/bin/componentize-py",
            || tools.componentize_py(),
        )?,
        &format!("componentize-py {COMPONENTIZE_PY}: `weir doctor python` says what is missing"),
        |c, wit| {
            c.arg("-d")
                .arg(wit)
                .args(["-w", world, "componentize", entry, "-p"])
                .arg(dir)
                .arg("-o")
                .arg(out);
        },
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_app_is_stateful_when_it_imports_weir_state() {
        assert!(super::stateful("import weir\nfrom weir import state\n"));
        assert!(super::stateful("from weir import log_info, state"));
        assert!(super::stateful("import weir.state as s"));
        assert!(super::stateful("from weir.state import get"));
        assert!(super::stateful("from weir import windows"));
        assert!(super::stateful("import weir.windows"));
        assert!(super::stateful("from weir import json_field, joins"));
        assert!(!super::stateful(
            "import weir\n# weir.state is not used\nstatement = 1"
        ));
        assert!(!super::stateful("from weir import statements"));
    }
}
