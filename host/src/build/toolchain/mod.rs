//! Where each guest language's build tools come from. `weir build` finds a
//! language's tools, and installs the ones it can into a cache directory it
//! owns, so a newcomer needs one command, not a page of setup: the
//! componentizers for Python and JavaScript at the versions the SDKs are
//! tested with (from PyPI and npm), the Rust target (rustup), Go's stock
//! toolchain (from the Go module proxy, checked against pinned digests).
//! C's compiler comes from the system's packages, so for C it names the
//! one `apt-get install` line instead. `weir doctor` reports the same
//! findings for every language.

mod c;
mod go;
mod js;
mod python;
mod rust;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use go::GO_VERSION;

use super::{GuestBuildError, output_text};

/// The tools cache: one directory per pinned tool, each complete once its
/// stamp file exists. Installs take a lock file, so parallel builds
/// install a tool once and never see half of one.
pub struct Toolchains {
    root: PathBuf,
    progress: Box<dyn Fn(&str) + Send + Sync>,
}

/// The file that marks a tool's directory as completely installed.
const STAMP: &str = ".weir-installed";

impl Toolchains {
    /// The cache at `root`; `progress` hears one line before each install
    /// (installs take seconds to minutes, and a silent pause looks hung).
    pub fn new(root: PathBuf, progress: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Toolchains {
            root,
            progress: Box::new(progress),
        }
    }

    /// `$WEIR_TOOLCHAINS_DIR`, else `$XDG_CACHE_HOME/weir/toolchains`, else
    /// `~/.cache/weir/toolchains`.
    pub fn default_root() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("WEIR_TOOLCHAINS_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d));
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("weir").join("toolchains"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of tool `name` when it is completely installed.
    fn installed(&self, name: &str) -> Option<PathBuf> {
        let dir = self.root.join(name);
        dir.join(STAMP).exists().then_some(dir)
    }

    /// The directory of tool `name`, installing it with `install` (given
    /// the empty directory) unless it is there. What `install` leaves
    /// behind on failure is removed, and so is a directory a killed
    /// install left without its stamp.
    fn install(
        &self,
        name: &str,
        what: &str,
        install: impl FnOnce(&Path) -> Result<(), GuestBuildError>,
    ) -> Result<PathBuf, GuestBuildError> {
        if let Some(dir) = self.installed(name) {
            return Ok(dir);
        }
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |err| GuestBuildError::Io { path, err }
        };
        std::fs::create_dir_all(&self.root).map_err(io(&self.root))?;
        let lock_path = self.root.join(format!("{name}.lock"));
        let lock = std::fs::File::create(&lock_path).map_err(io(&lock_path))?;
        lock.lock().map_err(io(&lock_path))?;
        // Another build may have installed it while this one waited.
        if let Some(dir) = self.installed(name) {
            return Ok(dir);
        }
        let dir = self.root.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        (self.progress)(&format!("installing {what} into {} (once)", dir.display()));
        if let Err(e) = install(&dir) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        let stamp = dir.join(STAMP);
        std::fs::write(&stamp, what).map_err(io(&stamp))?;
        Ok(dir)
    }

    /// componentize-py at the SDK's pinned version.
    pub fn componentize_py(&self) -> Result<PathBuf, GuestBuildError> {
        python::componentize_py(self)
    }

    /// componentize-js at the SDK's pinned version.
    pub fn componentize_js(&self) -> Result<PathBuf, GuestBuildError> {
        js::componentize_js(self)
    }

    /// A `go` command new enough for wasip1 reactors: the one on PATH, else
    /// the stock toolchain installed here.
    pub fn go(&self) -> Result<PathBuf, GuestBuildError> {
        go::go(self)
    }

    /// Add rustc's wasm32-wasip2 target (for the toolchain `dir` selects)
    /// when it is missing.
    pub fn rust_target(&self, dir: &Path) -> Result<(), GuestBuildError> {
        rust::ensure_target(self, dir)
    }

    /// The readiness of each language `wanted` accepts, as `weir doctor`
    /// prints it; the others are not checked (C's check compiles a program).
    pub fn report(&self, wanted: impl Fn(&str) -> bool) -> Vec<LanguageReport> {
        let checks: [(&'static str, &dyn Fn() -> Readiness); 5] = [
            ("rust", &rust::readiness),
            ("c", &c::readiness),
            ("go", &|| go::readiness(self)),
            ("python", &|| python::readiness(self)),
            ("js", &|| js::readiness(self)),
        ];
        checks
            .into_iter()
            .filter(|(language, _)| wanted(language))
            .map(|(language, check)| LanguageReport {
                language,
                readiness: check(),
            })
            .collect()
    }
}

/// One language's line in `weir doctor`.
pub struct LanguageReport {
    pub language: &'static str,
    pub readiness: Readiness,
}

/// Whether `weir build` can build a language now.
pub enum Readiness {
    /// Everything is there; what was found.
    Ready(String),
    /// `weir build` (or `weir doctor --install`) installs what is missing.
    Installable(String),
    /// Missing, and weir cannot install it: what to do, in one line.
    Missing(String),
}

/// Whether a C guest can be built, and the one line that fixes it if not.
pub use c::{APT_LINE as C_APT_LINE, check as check_c};

/// Run an install step; its output is shown only when it fails.
fn run_step(command: &mut Command, what: &str) -> Result<(), GuestBuildError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .map_err(|e| GuestBuildError::Toolchain(format!("{what}: running {program}: {e}")))?;
    if !output.status.success() {
        return Err(GuestBuildError::Toolchain(format!(
            "{what} failed ({program}, {}):\n{}",
            output.status,
            output_text(&output)
        )));
    }
    Ok(())
}

/// The first line a command prints for `args` when it succeeds, e.g. a
/// version.
fn first_line(program: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_install_runs_once_and_a_failed_one_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let tools = Toolchains::new(root.path().to_path_buf(), |_| {});
        let failed = tools.install("t-1", "t 1", |dir| {
            std::fs::write(dir.join("half"), "x").unwrap();
            Err(GuestBuildError::Toolchain("no network".into()))
        });
        assert!(failed.is_err());
        assert!(!root.path().join("t-1").exists());
        let mut runs = 0;
        for _ in 0..2 {
            let dir = tools
                .install("t-1", "t 1", |dir| {
                    runs += 1;
                    std::fs::write(dir.join("tool"), "x").map_err(|err| GuestBuildError::Io {
                        path: dir.to_path_buf(),
                        err,
                    })
                })
                .unwrap();
            assert!(dir.join("tool").exists());
        }
        assert_eq!(runs, 1);
    }

    #[test]
    fn a_directory_a_killed_install_left_is_installed_afresh() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("t-2")).unwrap();
        std::fs::write(root.path().join("t-2/stale"), "x").unwrap();
        let tools = Toolchains::new(root.path().to_path_buf(), |_| {});
        let dir = tools.install("t-2", "t 2", |_| Ok(())).unwrap();
        assert!(!dir.join("stale").exists());
        assert!(dir.join(STAMP).exists());
    }
}
