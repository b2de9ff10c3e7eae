//! Go guests with the stock Go toolchain: `GOOS=wasip1 GOARCH=wasm go build
//! -buildmode=c-shared` makes a reactor core module; [`adapter_realloc`]
//! gives it the allocator the WASI adapter needs; [`super::componentize`]
//! does the rest.
//!
//! Why the extra step: the WASI preview1 adapter takes its stack and state
//! (2 x 64 KiB) through the module's `cabi_realloc` on its first WASI call,
//! which Go's runtime makes inside `_initialize`, before Go code can run.
//! So the Go side exports its own allocator as `cabi_export_realloc` (which
//! wit-component uses for export arguments) and reserves a 192 KiB array
//! that starts with [`ARENA_MAGIC`]; here a small bump allocator over that
//! array is added and exported as `cabi_realloc`. Go never touches it.

use std::path::Path;
use std::process::Command;

use super::GuestBuildError;

/// The SDK's package, as written into a project's `weir/` by `weir new`:
/// the contract's types and the SDK (also native, for `go test`), and the
/// canonical-ABI bindings (wasip1 only).
pub const SDK: &[(&str, &str)] = &[
    ("abi.go", include_str!("../../../guest-sdk/go/weir/abi.go")),
    (
        "arena.go",
        include_str!("../../../guest-sdk/go/weir/arena.go"),
    ),
    (
        "columns.go",
        include_str!("../../../guest-sdk/go/weir/columns.go"),
    ),
    (
        "host_native.go",
        include_str!("../../../guest-sdk/go/weir/host_native.go"),
    ),
    (
        "joins.go",
        include_str!("../../../guest-sdk/go/weir/joins.go"),
    ),
    (
        "json.go",
        include_str!("../../../guest-sdk/go/weir/json.go"),
    ),
    (
        "output.go",
        include_str!("../../../guest-sdk/go/weir/output.go"),
    ),
    ("sdk.go", include_str!("../../../guest-sdk/go/weir/sdk.go")),
    (
        "state.go",
        include_str!("../../../guest-sdk/go/weir/state.go"),
    ),
    (
        "state_abi.go",
        include_str!("../../../guest-sdk/go/weir/state_abi.go"),
    ),
    (
        "state_native.go",
        include_str!("../../../guest-sdk/go/weir/state_native.go"),
    ),
    (
        "testing.go",
        include_str!("../../../guest-sdk/go/weir/testing.go"),
    ),
    (
        "types.go",
        include_str!("../../../guest-sdk/go/weir/types.go"),
    ),
    (
        "windows.go",
        include_str!("../../../guest-sdk/go/weir/windows.go"),
    ),
    (
        "weirtest/weirtest.go",
        include_str!("../../../guest-sdk/go/weir/weirtest/weirtest.go"),
    ),
];

/// How the SDK's own files import its package; `weir new` writes the
/// project's module path there instead.
pub const SDK_IMPORT: &str = "\"weir.dev/guest/weir\"";

/// The world Go guests are built for: every import and export. Go's linker
/// keeps an import only when the guest calls it, so a guest that uses no
/// keyed state stays stateless; the SDK implements the timer handler.
pub const WORLD: &str = "full-transformer";
/// The first bytes of the Go side's adapter arena.
pub const ARENA_MAGIC: &[u8] = b"weir-adapter-arena-v1\xff";
/// Its size: the adapter's two 64 KiB blocks, and room to spare.
pub const ARENA_SIZE: u32 = 192 << 10;

/// `go build` the package in `dir` into a core module at `out`, with the
/// `go` that `tools` finds or installs.
pub fn compile(
    dir: &Path,
    out: &Path,
    tools: &super::toolchain::Toolchains,
) -> Result<(), GuestBuildError> {
    let go = tools.go()?;
    let output = Command::new(&go)
        // -trimpath: panics name files by module path (`example.com/up/
        // main.go:12`), and no build machine's directories are kept in the
        // component.
        .args([
            "build",
            "-buildmode=c-shared",
            "-trimpath",
            "-ldflags=-s -w",
            "-o",
        ])
        .arg(out)
        .arg(".")
        .current_dir(dir)
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        .output()
        .map_err(|e| GuestBuildError::Toolchain(format!("running {}: {e}", go.display())))?;
    if !output.status.success() {
        return Err(GuestBuildError::Toolchain(format!(
            "go build failed:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    Ok(())
}

/// Where the arena starts in linear memory: the one active data segment
/// holding [`ARENA_MAGIC`].
#[cfg(feature = "component-tools")]
fn arena(module: &[u8]) -> Result<u32, String> {
    let mut hits = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        let wasmparser::Payload::DataSection(reader) = payload.map_err(|e| e.to_string())? else {
            continue;
        };
        for data in reader {
            let data = data.map_err(|e| e.to_string())?;
            let wasmparser::DataKind::Active { offset_expr, .. } = data.kind else {
                continue;
            };
            let mut ops = offset_expr.get_operators_reader();
            let Ok(wasmparser::Operator::I32Const { value }) = ops.read() else {
                continue;
            };
            if let Some(k) = data
                .data
                .windows(ARENA_MAGIC.len())
                .position(|w| w == ARENA_MAGIC)
            {
                hits.push(value as u32 + k as u32);
            }
        }
    }
    match hits[..] {
        [start] => Ok(start),
        _ => Err(format!(
            "expected one adapter arena (the weir Go package's), found {}",
            hits.len()
        )),
    }
}

/// Without the component tools: refused, saying so.
#[cfg(not(feature = "component-tools"))]
pub fn adapter_realloc(_: &[u8]) -> Result<Vec<u8>, GuestBuildError> {
    Err(super::without_component_tools())
}

/// Add the adapter's `cabi_realloc` to a Go core module.
#[cfg(feature = "component-tools")]
pub fn adapter_realloc(module: &[u8]) -> Result<Vec<u8>, GuestBuildError> {
    let err = |e: String| GuestBuildError::Toolchain(format!("preparing the Go module: {e}"));
    let start = arena(module).map_err(err)?;
    let end = start + ARENA_SIZE;
    let wat = wasmprinter::print_bytes(module).map_err(|e| err(e.to_string()))?;
    if wat.contains("(export \"cabi_realloc\"") {
        return Err(err(
            "the module exports cabi_realloc itself; export the Go allocator as cabi_export_realloc".into(),
        ));
    }
    let extra = format!(
        r#"
  (global $__weir_arena_next (mut i32) (i32.const {start}))
  (func $__weir_adapter_realloc (param $old i32) (param $old_size i32) (param $align i32) (param $new_size i32) (result i32)
    (local $p i32)
    (if (i32.ne (local.get $old) (i32.const 0)) (then unreachable))
    (local.set $p (i32.and
      (i32.add (global.get $__weir_arena_next) (i32.sub (local.get $align) (i32.const 1)))
      (i32.sub (i32.const 0) (local.get $align))))
    (if (i32.gt_u (i32.add (local.get $p) (local.get $new_size)) (i32.const {end})) (then unreachable))
    (global.set $__weir_arena_next (i32.add (local.get $p) (local.get $new_size)))
    (local.get $p))
  (export "cabi_realloc" (func $__weir_adapter_realloc))
"#
    );
    let at = wat
        .rfind("\n  (@producers")
        .or_else(|| wat.trim_end().rfind(')'))
        .ok_or_else(|| err("unexpected module text".into()))?;
    let patched = format!("{}{extra}{}", &wat[..at], &wat[at..]);
    wat::parse_str(&patched).map_err(|e| err(e.to_string()))
}

#[cfg(all(test, feature = "component-tools"))]
mod tests {
    use super::*;

    #[test]
    fn the_adapter_allocator_serves_from_the_arena_only() {
        let mut data = ARENA_MAGIC.to_vec();
        data.resize(ARENA_SIZE as usize, 0);
        let escaped: String = data.iter().map(|b| format!("\\{b:02x}")).collect();
        let module = wat::parse_str(format!(
            "(module (memory (export \"memory\") 8) (data (i32.const 4096) \"{escaped}\"))"
        ))
        .unwrap();
        let patched = adapter_realloc(&module).unwrap();
        wasmparser::Validator::new().validate_all(&patched).unwrap();
        let text = wasmprinter::print_bytes(&patched).unwrap();
        assert!(text.contains("(export \"cabi_realloc\""));
        assert!(text.contains("i32.const 4096"), "starts at the arena");
        let err = adapter_realloc(&wat::parse_str("(module)").unwrap()).unwrap_err();
        assert!(err.to_string().contains("found 0"), "{err}");
    }
}
