//! Confinement of a tenant's pipeline: every path it names (checkpoint,
//! embedded-log roots, file directories, sandbox grants) must resolve inside
//! the tenant's own data root, and its transform must be a component the
//! tenant uploaded. `..`, absolute paths and symlinks that lead out are
//! refused, as are Kafka sources and sinks (brokers would need an
//! allow-list per tenant, which does not exist yet).

use std::path::{Component, Path, PathBuf};

use crate::spec::{Pipeline, SinkSpec, SourceSpec};

/// Check that `path` stays inside `root` (both absolute; `root` exists).
pub fn inside(path: &Path, root: &Path, what: &str) -> Result<(), String> {
    let out = || format!("{what} `{}` is outside the tenant's data", path.display());
    if path.components().any(|c| c == Component::ParentDir) || !path.starts_with(root) {
        return Err(out());
    }
    // Symlinks: the deepest part that exists must resolve inside too.
    let real_root = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
    let mut probe = path.to_path_buf();
    while !probe.exists() {
        if !probe.pop() {
            return Err(out());
        }
    }
    let real = std::fs::canonicalize(&probe).map_err(|e| e.to_string())?;
    if !real.starts_with(&real_root) {
        return Err(out());
    }
    Ok(())
}

/// Every path of `p`, checked against `root`.
pub fn pipeline(p: &Pipeline, root: &Path) -> Result<(), String> {
    inside(&p.checkpoint, root, "checkpoint")?;
    for s in &p.sources {
        match s {
            SourceSpec::Log { root: r, .. } => inside(r, root, "source path")?,
            SourceSpec::Files { dir, .. } => inside(dir, root, "source path")?,
            SourceSpec::Rate { .. } => {}
            SourceSpec::Kafka(_) => return Err(KAFKA.into()),
        }
    }
    for (_, s) in &p.sinks {
        match s {
            SinkSpec::Log { root: r, .. } => inside(r, root, "sink path")?,
            SinkSpec::Files { dir, .. } => inside(dir, root, "sink path")?,
            SinkSpec::Console => {}
            SinkSpec::Kafka(_) => return Err(KAFKA.into()),
        }
    }
    if let Some(t) = &p.transform {
        for (dir, _) in &t.sandbox.dirs {
            inside(dir, root, "sandbox directory")?;
        }
    }
    Ok(())
}

const KAFKA: &str = "Kafka sources and sinks are not available through weir serve yet (brokers need a per-tenant allow-list)";

/// A tenant's data root under the service's data directory.
pub fn tenant_root(data: &Path, tenant: &str) -> PathBuf {
    data.join("tenants").join(tenant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        std::fs::create_dir_all(root.join("data")).unwrap();
        inside(&root.join("data/x/y"), &root, "p").unwrap();
        for bad in [
            root.join("../other"),
            dir.path().join("elsewhere"),
            PathBuf::from("/etc"),
        ] {
            let err = inside(&bad, &root, "p").unwrap_err();
            assert!(err.contains("outside the tenant's data"), "{err}");
        }
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        assert!(inside(&root.join("link/secret"), &root, "p").is_err());
    }
}
