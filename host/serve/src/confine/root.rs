//! A tenant's data root as a type: the one way the service turns a path or
//! a name that a tenant wrote into a place on disk.

use std::path::{Component, Path, PathBuf};

/// `<data>/tenants/<tenant>`, created and resolved (symlinks included) once.
/// Every place a served pipeline reads or writes comes out of
/// [`TenantRoot::place`], which refuses what would lead out of it, and
/// every message shown to the tenant goes through [`TenantRoot::redact`],
/// so the server's own directories never appear in one.
#[derive(Debug, Clone)]
pub struct TenantRoot {
    /// As the service names it (under its data directory).
    dir: PathBuf,
    /// The same, with symlinks resolved.
    real: PathBuf,
}

impl TenantRoot {
    /// The root of `tenant` (a valid tenant name) under `data`, created if
    /// missing.
    pub fn open(data: &Path, tenant: &str) -> std::io::Result<TenantRoot> {
        debug_assert!(super::super::tenants::valid_name(tenant));
        let dir = data.join("tenants").join(tenant);
        weir_engine::durable::create_dir_all(&dir)?;
        let real = std::fs::canonicalize(&dir)?;
        Ok(TenantRoot { dir, real })
    }

    /// The root as messages show it, without touching the disk (to redact
    /// what an existing pipeline reports).
    pub fn shown(data: &Path, tenant: &str) -> TenantRoot {
        let dir = data.join("tenants").join(tenant);
        let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        TenantRoot { dir, real }
    }

    /// Where the root is, without creating it (to measure or remove it).
    pub fn path_of(data: &Path, tenant: &str) -> PathBuf {
        data.join("tenants").join(tenant)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `path` (a pipeline's path, already joined onto the root) if it stays
    /// inside the root: no `..`, no absolute path elsewhere, and the
    /// deepest part that exists resolves inside, so a symlink cannot lead
    /// out either. `what` names it in the refusal.
    pub fn place(&self, path: &Path, what: &str) -> Result<PathBuf, String> {
        if unconfined() {
            return Ok(path.to_path_buf());
        }
        let out = || {
            format!(
                "{what} `{}` is outside the tenant's data",
                self.redact(&path.display().to_string())
            )
        };
        let plain = path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        if !plain || !(path.starts_with(&self.dir) || path.starts_with(&self.real)) {
            return Err(out());
        }
        let mut probe = path.to_path_buf();
        while std::fs::symlink_metadata(&probe).is_err() {
            if !probe.pop() {
                return Err(out());
            }
        }
        match std::fs::canonicalize(&probe) {
            Ok(real) if real.starts_with(&self.real) => Ok(path.to_path_buf()),
            _ => Err(out()),
        }
    }

    /// A directory `name` joins onto `dir` (a topic's directory under a
    /// log's root), placed like any path.
    pub fn place_in(&self, dir: &Path, name: &str, what: &str) -> Result<PathBuf, String> {
        self.place(&dir.join(name), what)
    }

    /// Every string in `v` redacted (a pipeline's view: its last error, its
    /// progress report's source descriptions).
    pub fn redact_json(&self, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.contains('/') => *s = self.redact(s),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.redact_json(x)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| self.redact_json(x)),
            _ => {}
        }
    }

    /// `message` with the root shown as the tenant sees it (paths relative
    /// to its root) and the service's data directory hidden.
    pub fn redact(&self, message: &str) -> String {
        let mut m = message.to_string();
        for root in [&self.real, &self.dir] {
            let shown = root.display().to_string();
            m = m.replace(&format!("{shown}/"), "").replace(&shown, ".");
        }
        let data = self.dir.parent().and_then(Path::parent);
        if let Some(data) = data.filter(|d| !d.as_os_str().is_empty()) {
            m = m.replace(&data.display().to_string(), "<data>");
        }
        m
    }
}

/// Test builds only: `WEIR_FAULT_UNCONFINED` puts a confinement bug back
/// (every place is accepted), to show that the kernel's fence
/// ([`crate::fence`]) stops what gets through.
#[cfg(feature = "fault-injection")]
fn unconfined() -> bool {
    std::env::var_os("WEIR_FAULT_UNCONFINED").is_some()
}

#[cfg(not(feature = "fault-injection"))]
fn unconfined() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = TenantRoot::open(dir.path(), "t").unwrap();
        std::fs::create_dir_all(root.dir().join("data")).unwrap();
        root.place(&root.dir().join("data/x/y"), "p").unwrap();
        root.place_in(&root.dir().join("data"), "topic", "p")
            .unwrap();
        for bad in [
            root.dir().join("../other"),
            root.dir().join("data/../../other"),
            dir.path().join("elsewhere"),
            PathBuf::from("/etc"),
        ] {
            let err = root.place(&bad, "p").unwrap_err();
            assert!(err.contains("outside the tenant's data"), "{err}");
            assert!(!err.contains(&dir.path().display().to_string()), "{err}");
        }
        std::os::unix::fs::symlink(dir.path(), root.dir().join("link")).unwrap();
        assert!(root.place(&root.dir().join("link/secret"), "p").is_err());
        assert!(root.place(&root.dir().join("link"), "p").is_err());
        // A dangling symlink is refused too (it would be followed on create).
        std::os::unix::fs::symlink("/nonexistent-weir", root.dir().join("dangling")).unwrap();
        assert!(root.place(&root.dir().join("dangling/x"), "p").is_err());
    }

    #[test]
    fn messages_show_no_server_paths() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let root = TenantRoot::open(&data, "acme").unwrap();
        let msg = format!(
            "`{}/in` is not a directory; see {}/weir.db",
            root.dir().display(),
            data.display()
        );
        assert_eq!(
            root.redact(&msg),
            "`in` is not a directory; see <data>/weir.db"
        );
    }
}
