//! C guests: bindings generated from the contract (wit-bindgen's C
//! generator, run in-process), compiled by clang for `wasm32-wasi` as a
//! reactor, then made a component by [`super::componentize`].

use std::path::{Path, PathBuf};
use std::process::Command;

use super::GuestBuildError;

/// The world C guests are built for: every import and export. The core
/// module imports only the functions it calls, so a guest that uses no
/// keyed state stays stateless; the SDK implements the timer handler.
pub const WORLD: &str = "full-transformer";
/// The world's name as the C generator spells it: the stem of its files
/// (`weir/full_transformer.h`, `.c`) and of its identifiers.
pub const STEM: &str = "full_transformer";

/// The SDK (`guest-sdk/c`), written into a project's `weir/` beside the
/// generated bindings; `weir build` compiles its `.c` files. The native
/// test harness (`weir_native.c`, `weir_testing.*`) compiles to nothing
/// for wasm32, and the window and join code is linked in only by guests that use
/// it, so other guests stay stateless.
pub const SDK: &[(&str, &str)] = &[
    ("weir.h", include_str!("../../../guest-sdk/c/weir.h")),
    (
        "weir_internal.h",
        include_str!("../../../guest-sdk/c/weir_internal.h"),
    ),
    ("weir.c", include_str!("../../../guest-sdk/c/weir.c")),
    (
        "weir_exports.c",
        include_str!("../../../guest-sdk/c/weir_exports.c"),
    ),
    (
        "weir_host.c",
        include_str!("../../../guest-sdk/c/weir_host.c"),
    ),
    (
        "weir_json.c",
        include_str!("../../../guest-sdk/c/weir_json.c"),
    ),
    (
        "weir_windows.c",
        include_str!("../../../guest-sdk/c/weir_windows.c"),
    ),
    (
        "weir_joins.c",
        include_str!("../../../guest-sdk/c/weir_joins.c"),
    ),
    (
        "weir_window_state.c",
        include_str!("../../../guest-sdk/c/weir_window_state.c"),
    ),
    (
        "weir_testing.h",
        include_str!("../../../guest-sdk/c/weir_testing.h"),
    ),
    (
        "weir_testing.c",
        include_str!("../../../guest-sdk/c/weir_testing.c"),
    ),
    (
        "weir_native.c",
        include_str!("../../../guest-sdk/c/weir_native.c"),
    ),
];

/// Without the component tools: refused, saying so.
#[cfg(not(feature = "component-tools"))]
pub fn bindings() -> Result<Vec<(String, Vec<u8>)>, GuestBuildError> {
    Err(super::without_component_tools())
}

/// The generated bindings: (file name, contents), e.g. `record_transformer.h`.
#[cfg(feature = "component-tools")]
pub fn bindings() -> Result<Vec<(String, Vec<u8>)>, GuestBuildError> {
    let (mut resolve, id) = super::contract(WORLD)?;
    let opts = wit_bindgen_c::Opts {
        // weir embeds the type information itself when it builds.
        no_object_file: true,
        ..Default::default()
    };
    let mut files = wit_bindgen_core::Files::default();
    opts.build()
        .generate(&mut resolve, id, &mut files)
        .map_err(|err| GuestBuildError::Bindings { lang: "C", err })?;
    let mut out: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(name, bytes)| (name.to_string(), bytes.to_vec()))
        .collect();
    // The generated C links against the type-information object it was
    // told not to write; weir embeds that information itself at build.
    out.push((
        format!("{STEM}_component_type.c"),
        format!(
            "// weir embeds the component type when it builds; this only satisfies the link.\nvoid __component_type_object_force_link_{STEM}(void) {{}}\n"
        )
        .into_bytes(),
    ));
    Ok(out)
}

/// The clang that targets WebAssembly: `$CC` if set, else the first of
/// `clang-19`, `clang` found on PATH.
pub(crate) fn clang() -> Result<String, GuestBuildError> {
    if let Ok(cc) = std::env::var("CC") {
        return Ok(cc);
    }
    for c in ["clang-19", "clang"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(c.to_string());
        }
    }
    Err(GuestBuildError::Toolchain(format!(
        "no clang found: C guests need clang, wasm-ld, wasi-libc and compiler-rt for wasm32; on Debian or Ubuntu: {} (or set CC)",
        super::toolchain::C_APT_LINE
    )))
}

/// Compile `sources` (with `include` on the include path) into a reactor
/// core module at `out`.
pub fn compile(sources: &[PathBuf], include: &Path, out: &Path) -> Result<(), GuestBuildError> {
    let cc = clang()?;
    let output = Command::new(&cc)
        .args([
            "--target=wasm32-wasi",
            "-mexec-model=reactor",
            "-O2",
            "-Wall",
        ])
        .args(["-Wl,--strip-debug"])
        .arg("-I")
        .arg(include)
        .arg("-o")
        .arg(out)
        .args(sources)
        .output()
        .map_err(|e| GuestBuildError::Toolchain(format!("running {cc}: {e}")))?;
    if !output.status.success() {
        // The user's code, or a missing part of the toolchain (wasi-libc's
        // headers, wasm-ld, compiler-rt), which the probe tells apart.
        super::toolchain::check_c(&cc)?;
        return Err(GuestBuildError::Toolchain(format!(
            "{cc} failed:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    Ok(())
}

#[cfg(all(test, feature = "component-tools"))]
mod tests {
    #[test]
    fn bindings_name_the_exports_a_guest_implements() {
        let files = super::bindings().unwrap();
        let header = files
            .iter()
            .find(|(n, _)| *n == format!("{}.h", super::STEM))
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .expect("the header");
        assert!(
            header.contains("exports_weir_transform_transform_process_batch"),
            "{header}"
        );
        assert!(
            header.contains("exports_weir_transform_record_transform_process_record"),
            "{header}"
        );
        assert!(
            files
                .iter()
                .any(|(n, _)| *n == format!("{}_component_type.c", super::STEM))
        );
    }
}
