//! C guests need clang with a wasm32 linker, wasi-libc and compiler-rt for
//! wasm32: system packages, which weir does not install, so it names them.

use std::process::Command;

use super::Readiness;
use crate::build::GuestBuildError;

/// The one line that installs the C toolchain on Debian and Ubuntu.
pub const APT_LINE: &str = "apt-get install clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32";

/// Whether `cc` builds a WebAssembly reactor that uses the C library: a
/// two-line program compiled and linked the way `weir build` does. The
/// error is the one line that fixes it.
pub fn check(cc: &str) -> Result<(), GuestBuildError> {
    let missing = |why: String| {
        GuestBuildError::Toolchain(format!(
            "{why}: C guests need clang, wasm-ld, wasi-libc and compiler-rt for wasm32; on Debian or Ubuntu: {APT_LINE} (or set CC to such a clang)"
        ))
    };
    let dir = tempfile::tempdir().map_err(|err| GuestBuildError::Io {
        path: std::env::temp_dir(),
        err,
    })?;
    let source = dir.path().join("probe.c");
    std::fs::write(
        &source,
        "#include <stdlib.h>\n#include <string.h>\nint weir_probe(int n) { char *p = malloc(n); memset(p, 1, n); return p[0]; }\n",
    )
    .map_err(|err| GuestBuildError::Io {
        path: source.clone(),
        err,
    })?;
    let output = Command::new(cc)
        .args(["--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-o"])
        .arg(dir.path().join("probe.wasm"))
        .arg(&source)
        .output()
        .map_err(|e| missing(format!("running {cc}: {e}")))?;
    if !output.status.success() {
        let text = crate::build::output_text(&output);
        let first = text.lines().find(|l| l.contains("error")).unwrap_or("");
        return Err(missing(format!(
            "{cc} cannot build for wasm32-wasi ({first})"
        )));
    }
    Ok(())
}

pub(super) fn readiness() -> Readiness {
    let cc = match crate::build::c::clang() {
        Ok(cc) => cc,
        Err(e) => return Readiness::Missing(e.to_string()),
    };
    match check(&cc) {
        Ok(()) => Readiness::Ready(
            super::first_line(std::path::Path::new(&cc), &["--version"]).unwrap_or(cc),
        ),
        Err(e) => Readiness::Missing(e.to_string()),
    }
}
