//! Defence in depth from the kernel. Confinement by type
//! ([`super::confine::TenantRoot`]) keeps a served pipeline's paths inside
//! its tenant's root; if that ever had a bug, Linux Landlock stops the
//! pipeline's threads anyway: each runs in a domain that may read and write
//! only beneath its tenant's root, and read only the component store, the
//! compile cache and the few system files that name resolution and TLS
//! need. A domain covers the thread that enters it and every thread it
//! starts afterwards (the query's tasks, workers, sinks, Kafka clients).
//! Where the kernel offers no Landlock, weir says so at start and runs
//! without it.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

/// The newest Landlock ABI this build asks for; older kernels get what
/// they offer of it.
const ASKED: ABI = ABI::V5;

/// System files a pipeline thread may read: name resolution (Kafka brokers
/// by name) and TLS roots. Missing ones are skipped.
const SYSTEM_READ: &[&str] = &[
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/pki",
    "/etc/ca-certificates",
    "/usr/lib/ssl",
    "/usr/share/ca-certificates",
    "/dev/urandom",
    "/dev/null",
];

/// The Landlock ABI version the running kernel offers, or why none.
pub fn kernel_abi() -> Result<i64, String> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    // only reports the ABI version; it creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    if v >= 1 {
        Ok(v)
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// Log once what the kernel offers (`weir serve` at start).
pub fn report() {
    match kernel_abi() {
        Ok(v) => tracing::info!(
            "serve: Linux Landlock ABI {v}: each served pipeline's threads are fenced into its tenant's data"
        ),
        Err(e) => tracing::warn!(
            "serve: Linux Landlock is not offered here ({e}): served pipelines are confined by weir's own checks only"
        ),
    }
}

/// Where one tenant's pipeline threads may go.
#[derive(Debug, Clone)]
pub struct Fence {
    read_write: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
}

impl Fence {
    /// Read-write beneath `root` (the tenant's data), read-only in
    /// `components` and `cache` (the compile cache, if any).
    pub fn for_tenant(root: &Path, components: &Path, cache: Option<&Path>) -> Fence {
        let mut read_only: Vec<PathBuf> = vec![components.to_path_buf()];
        read_only.extend(cache.map(Path::to_path_buf));
        read_only.extend(SYSTEM_READ.iter().map(PathBuf::from));
        Fence {
            read_write: vec![root.to_path_buf()],
            read_only,
        }
    }

    /// Confine the calling thread, and the threads it starts from now on.
    /// Returns whether the kernel enforced it; an error only when the
    /// kernel offers Landlock and the domain could not be built.
    pub fn enter(&self) -> Result<bool, String> {
        let all = AccessFs::from_all(ASKED);
        let read = AccessFs::from_read(ASKED);
        let status = Ruleset::default()
            .handle_access(all)
            .and_then(|r| r.create())
            .and_then(|r| r.add_rules(path_beneath_rules(&self.read_write, all)))
            .and_then(|r| r.add_rules(path_beneath_rules(&self.read_only, read)))
            .and_then(|r| r.restrict_self())
            .map_err(|e| format!("Landlock: {e}"))?;
        Ok(status.ruleset != RulesetStatus::NotEnforced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_thread_reaches_its_root_only() {
        if kernel_abi().is_err() {
            eprintln!("no Landlock on this kernel: nothing to check");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (root, other, components) = (
            dir.path().join("root"),
            dir.path().join("other"),
            dir.path().join("components"),
        );
        for d in [&root, &other, &components] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(other.join("secret"), b"s").unwrap();
        std::fs::write(components.join("c.wasm"), b"c").unwrap();
        let fence = Fence::for_tenant(&root, &components, None);
        let (root2, other2, comp2) = (root.clone(), other.clone(), components.clone());
        std::thread::spawn(move || {
            assert!(fence.enter().unwrap());
            std::fs::write(root2.join("mine"), b"ok").unwrap();
            // A thread started inside the domain is inside it too.
            std::thread::spawn(move || {
                let denied = std::fs::read(other2.join("secret")).unwrap_err();
                assert_eq!(denied.kind(), std::io::ErrorKind::PermissionDenied);
                assert!(std::fs::write(other2.join("planted"), b"x").is_err());
                assert_eq!(std::fs::read(comp2.join("c.wasm")).unwrap(), b"c");
                assert!(std::fs::write(comp2.join("c.wasm"), b"x").is_err());
                assert!(std::fs::read("/etc/passwd").is_err());
            })
            .join()
            .unwrap();
        })
        .join()
        .unwrap();
        // This thread was never fenced.
        assert_eq!(std::fs::read(other.join("secret")).unwrap(), b"s");
        assert!(!other.join("planted").exists());
    }
}
