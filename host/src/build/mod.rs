//! Building guests into components (`weir new`, `weir build`). For
//! languages whose toolchains emit a WebAssembly *core* module (C with
//! clang, Go), weir does the component step itself: the contract's WIT
//! (compiled into weir) is embedded in the module, and the module is
//! wrapped with the WASI preview1 reactor adapter into a component. So a
//! guest author needs only their language's own toolchain.

pub mod c;
pub mod go;
pub mod js;
pub mod python;
pub mod toolchain;

#[cfg(feature = "component-tools")]
use wit_parser::{Resolve, WorldId};

/// The contract, as this weir speaks it.
pub const WIT: &str = include_str!("../../../wit/transform.wit");

#[derive(Debug, thiserror::Error)]
pub enum GuestBuildError {
    #[error("the weir contract: {0:#}")]
    Contract(anyhow::Error),
    #[error("making a component of {module}: {err:#}")]
    Componentize { module: String, err: anyhow::Error },
    #[error("generating {lang} bindings: {err:#}")]
    Bindings {
        lang: &'static str,
        err: anyhow::Error,
    },
    #[error("{0}")]
    Toolchain(String),
    #[error("{path}: {err}")]
    Io {
        path: std::path::PathBuf,
        err: std::io::Error,
    },
}

/// Which packaging tool to run: `$env` when set, else the project's own
/// install at `dir/local` (where the project file that pins it installs
/// it), else the pinned one from weir's tools cache, installed there by
/// `cached` when missing.
pub(crate) fn packager(
    env: &str,
    dir: &std::path::Path,
    local: &str,
    cached: impl FnOnce() -> Result<std::path::PathBuf, GuestBuildError>,
) -> Result<String, GuestBuildError> {
    if let Ok(tool) = std::env::var(env) {
        return Ok(tool);
    }
    let local = dir.join(local);
    if local.exists() {
        return Ok(local.display().to_string());
    }
    Ok(cached()?.display().to_string())
}

/// Run a language's own packaging tool (componentize-py, componentize-js)
/// with the contract's WIT in a temporary directory: `args` adds the
/// arguments, given that directory. `install` says how to get the tool.
pub(crate) fn run_packager(
    tool: &str,
    install: &str,
    args: impl FnOnce(&mut std::process::Command, &std::path::Path),
) -> Result<(), GuestBuildError> {
    let wit = tempfile::tempdir().map_err(|err| GuestBuildError::Io {
        path: std::env::temp_dir(),
        err,
    })?;
    let wit_file = wit.path().join("transform.wit");
    std::fs::write(&wit_file, WIT).map_err(|err| GuestBuildError::Io {
        path: wit_file.clone(),
        err,
    })?;
    let mut command = std::process::Command::new(tool);
    args(&mut command, wit.path());
    let output = command
        .output()
        .map_err(|e| GuestBuildError::Toolchain(format!("running {tool}: {e}; {install}")))?;
    if !output.status.success() {
        return Err(GuestBuildError::Toolchain(format!(
            "{tool} failed:\n{}",
            output_text(&output)
        )));
    }
    Ok(())
}

/// The text a command printed, stdout then stderr, trimmed; for errors.
pub(crate) fn output_text(output: &std::process::Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_string();
    let err = String::from_utf8_lossy(&output.stderr);
    if !err.trim().is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(err.trim_end());
    }
    text
}

/// Check `file` with the language's own fast checker (`node --check`,
/// Python's `py_compile`) before the componentizer, which takes many
/// seconds to report the same syntax error. It runs in the project `dir`,
/// so its message names the file as the user knows it. A checker that is
/// not installed is skipped: the componentizer still reports the error.
pub(crate) fn syntax_check(
    dir: &std::path::Path,
    checker: &str,
    args: &[&str],
    envs: &[(&str, &std::path::Path)],
) -> Result<(), GuestBuildError> {
    let mut command = std::process::Command::new(checker);
    command.args(args).current_dir(dir);
    for (k, v) in envs {
        command.env(k, v);
    }
    let Ok(output) = command.output() else {
        return Ok(());
    };
    if output.status.success() {
        return Ok(());
    }
    // The checker's own frames and banner say nothing about the user's code.
    let text = output_text(&output);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !l.contains("node:internal") && !l.starts_with("Node.js v"))
        .collect();
    Err(GuestBuildError::Toolchain(lines.join("\n")))
}

/// The contract parsed, and the id of `world` in it.
#[cfg(feature = "component-tools")]
pub fn contract(world: &str) -> Result<(Resolve, WorldId), GuestBuildError> {
    let mut resolve = Resolve::default();
    let pkg = resolve
        .push_str("transform.wit", WIT)
        .map_err(GuestBuildError::Contract)?;
    let id = resolve
        .select_world(&[pkg], Some(world))
        .map_err(GuestBuildError::Contract)?;
    Ok((resolve, id))
}

/// What a weir built without the component tools says when asked for them.
#[cfg_attr(feature = "component-tools", allow(dead_code))]
pub(crate) fn without_component_tools() -> GuestBuildError {
    GuestBuildError::Toolchain(
        "this weir was built without the component tools for C and Go guests (cargo feature `component-tools`); build it with `cargo build --release`".into(),
    )
}

/// Without the component tools: refused, saying so.
#[cfg(not(feature = "component-tools"))]
pub fn componentize(_: &[u8], _: &str, _: &str) -> Result<Vec<u8>, GuestBuildError> {
    Err(without_component_tools())
}

/// Turn a core module built for `world` (a preview1 reactor) into a
/// component: embed the world's type information, then adapt its WASI
/// preview1 imports to the preview2 interfaces the host provides.
#[cfg(feature = "component-tools")]
pub fn componentize(module: &[u8], name: &str, world: &str) -> Result<Vec<u8>, GuestBuildError> {
    let (resolve, id) = contract(world)?;
    let err = |err: anyhow::Error| GuestBuildError::Componentize {
        module: name.to_string(),
        err,
    };
    let mut bytes = module.to_vec();
    wit_component::embed_component_metadata(
        &mut bytes,
        &resolve,
        id,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .map_err(err)?;
    wit_component::ComponentEncoder::default()
        .module(&bytes)
        .map_err(err)?
        .adapter(
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .map_err(err)?
        .validate(true)
        .encode()
        .map_err(err)
}

#[cfg(all(test, feature = "component-tools"))]
mod tests {
    use super::*;

    #[test]
    fn the_contract_parses_and_a_module_without_exports_is_refused() {
        contract("transformer").unwrap();
        contract("stateful-transformer").unwrap();
        let module = wat::parse_str("(module (memory (export \"memory\") 1))").unwrap();
        let err = componentize(&module, "empty.wasm", "transformer").unwrap_err();
        assert!(err.to_string().contains("empty.wasm"), "{err}");
    }
}
