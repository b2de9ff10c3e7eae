//! The Rust SDK, vendored into a new project's `weir/` (as every other
//! language's SDK is), so the project builds wherever it is cloned:
//! `weir-guest` is not on crates.io, and a path to the checkout weir was
//! built from would tie the project to one machine.
//!
//! `weir/guest-sdk` and `weir/wire` are the crates as they are in this
//! repository, their manifests made standalone (the workspace's package
//! fields written in, dev-dependencies dropped); `weir/wit` is the contract
//! the SDK's bindings are generated from.

use include_dir::{Dir, include_dir};

static GUEST_SDK_SRC: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../guest-sdk/src");
static WIRE_SRC: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../wire/src");
const GUEST_SDK_MANIFEST: &str = include_str!("../../../../guest-sdk/Cargo.toml");
const WIRE_MANIFEST: &str = include_str!("../../../../wire/Cargo.toml");
const WORKSPACE_MANIFEST: &str = include_str!("../../../../Cargo.toml");

/// Where the project's Cargo.toml finds the SDK.
pub const PATH: &str = "weir/guest-sdk";

/// The vendored files: path under the project, contents.
pub fn files() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for (dir, src, manifest) in [
        ("weir/guest-sdk", &GUEST_SDK_SRC, GUEST_SDK_MANIFEST),
        ("weir/wire", &WIRE_SRC, WIRE_MANIFEST),
    ] {
        out.push((
            format!("{dir}/Cargo.toml"),
            standalone(manifest)?.into_bytes(),
        ));
        push_tree(&mut out, &format!("{dir}/src"), src);
    }
    out.push((
        "weir/wit/transform.wit".to_string(),
        weir::build::WIT.as_bytes().to_vec(),
    ));
    Ok(out)
}

fn push_tree(out: &mut Vec<(String, Vec<u8>)>, prefix: &str, dir: &Dir<'_>) {
    for file in dir.files() {
        out.push((
            format!("{prefix}/{}", file.path().display()),
            file.contents().to_vec(),
        ));
    }
    for sub in dir.dirs() {
        push_tree(out, prefix, sub);
    }
}

/// A workspace member's manifest as a crate of its own: `x.workspace =
/// true` fields take the workspace's values; no dev-dependencies (the
/// SDK's own tests stay in weir's repository).
fn standalone(manifest: &str) -> anyhow::Result<String> {
    let mut crate_toml: toml::Table = toml::from_str(manifest)?;
    let workspace: toml::Table = toml::from_str(WORKSPACE_MANIFEST)?;
    let inherited = |section: &str| {
        workspace
            .get("workspace")
            .and_then(|w| w.get(section))
            .and_then(|s| s.as_table())
            .cloned()
            .unwrap_or_default()
    };
    let (package_values, dependency_values) = (inherited("package"), inherited("dependencies"));
    let from_workspace = |v: &toml::Value| {
        v.get("workspace")
            .and_then(toml::Value::as_bool)
            .unwrap_or(false)
    };
    if let Some(package) = crate_toml.get_mut("package").and_then(|p| p.as_table_mut()) {
        for (key, value) in package.iter_mut() {
            if from_workspace(value) {
                *value = package_values
                    .get(key)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("the workspace has no package.{key}"))?;
            }
        }
    }
    if let Some(deps) = crate_toml
        .get_mut("dependencies")
        .and_then(|d| d.as_table_mut())
    {
        for (name, value) in deps.iter_mut() {
            if from_workspace(value) {
                *value = dependency_values
                    .get(name)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("the workspace has no dependency {name}"))?;
            }
        }
    }
    crate_toml.remove("dev-dependencies");
    Ok(format!(
        "# Vendored by `weir new` from weir {}: the weir guest SDK.\n{}",
        env!("CARGO_PKG_VERSION"),
        toml::to_string(&crate_toml)?
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn vendored_manifests_stand_alone() {
        let files = super::files().unwrap();
        let manifest = |path: &str| -> toml::Table {
            let (_, bytes) = files.iter().find(|(p, _)| p == path).unwrap();
            toml::from_str(std::str::from_utf8(bytes).unwrap()).unwrap()
        };
        for path in ["weir/guest-sdk/Cargo.toml", "weir/wire/Cargo.toml"] {
            let m = manifest(path);
            let text = toml::to_string(&m).unwrap();
            assert!(!text.contains("workspace"), "{path}: {text}");
            assert!(m.get("dev-dependencies").is_none());
            assert!(m["package"]["edition"].as_str().is_some());
        }
        assert!(files.iter().any(|(p, _)| p == "weir/guest-sdk/src/lib.rs"));
        assert!(files.iter().any(|(p, _)| p == "weir/wire/src/lib.rs"));
        assert!(files.iter().any(|(p, _)| p == "weir/wit/transform.wit"));
    }
}
