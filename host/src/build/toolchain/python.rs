//! componentize-py, pinned, in a virtual environment of its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Readiness, Toolchains};
use crate::build::GuestBuildError;
use crate::build::python::COMPONENTIZE_PY;

fn name() -> String {
    format!("componentize-py-{COMPONENTIZE_PY}")
}

fn tool(dir: &Path) -> PathBuf {
    dir.join("venv/bin/componentize-py")
}

/// The Python that makes the environment: `$WEIR_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("WEIR_PYTHON").unwrap_or_else(|_| "python3".into())
}

pub(super) fn componentize_py(tools: &Toolchains) -> Result<PathBuf, GuestBuildError> {
    let what = format!("componentize-py {COMPONENTIZE_PY} (from PyPI)");
    let dir = tools.install(&name(), &what, |dir| {
        let venv = dir.join("venv");
        super::run_step(
            Command::new(python()).args(["-m", "venv"]).arg(&venv),
            "creating a Python virtual environment (on Debian: apt-get install python3-venv)",
        )?;
        super::run_step(
            Command::new(venv.join("bin/pip")).args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                &format!("componentize-py=={COMPONENTIZE_PY}"),
            ]),
            &format!("installing {what}"),
        )
    })?;
    Ok(tool(&dir))
}

pub(super) fn readiness(tools: &Toolchains) -> Readiness {
    let Some(version) = super::first_line(Path::new(&python()), &["--version"]) else {
        return Readiness::Missing(
            "no python3: install Python 3.11+ (on Debian: apt-get install python3 python3-venv)"
                .into(),
        );
    };
    match tools.installed(&name()) {
        Some(dir) => Readiness::Ready(format!(
            "{version}; componentize-py {COMPONENTIZE_PY} at {}",
            tool(&dir).display()
        )),
        None => Readiness::Installable(format!(
            "{version}; componentize-py {COMPONENTIZE_PY} is installed from PyPI on the first build"
        )),
    }
}
