//! Go's stock toolchain. The `go` on PATH when it is new enough for wasip1
//! reactors (1.24+); else the release the SDK is tested with, taken from
//! the Go module proxy as the `go` command's own GOTOOLCHAIN switch takes
//! it (`golang.org/toolchain`), and checked against the digests below
//! before a byte of it runs.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::{Readiness, Toolchains};
use crate::build::GuestBuildError;

/// The Go release weir installs when none is usable.
pub const GO_VERSION: &str = "go1.26.8";
/// The oldest Go with `go:wasmexport` and wasip1 `c-shared` builds.
const OLDEST: (u32, u32) = (1, 24);
/// SHA-256 of the proxy's `golang.org/toolchain` zip of [`GO_VERSION`], by
/// Go's platform name.
const DIGESTS: &[(&str, &str)] = &[
    (
        "linux-amd64",
        "30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7",
    ),
    (
        "linux-arm64",
        "02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99",
    ),
    (
        "darwin-arm64",
        "0aad5fb52b88498885290178adc0bcfe429bc63012621af9f83282eb640bd9c7",
    ),
    (
        "darwin-amd64",
        "fe99a2009e5bb51e06d7784f1a486478673512041c2671157bd382806e2aedcf",
    ),
];
/// A toolchain zip is about 70 MB; anything far past that is not one.
const MAX_ZIP: u64 = 256 << 20;

/// This machine's platform in Go's spelling.
fn platform() -> Option<String> {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "linux" => "linux",
        _ => return None,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        _ => return None,
    };
    Some(format!("{os}-{arch}"))
}

/// `go1.26.8` -> (1, 26); `go1.24rc1` -> (1, 24).
fn release(version: &str) -> Option<(u32, u32)> {
    let rest = version.trim().strip_prefix("go")?;
    let mut parts = rest.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// The version of the `go` at `program`, when it runs. `GOTOOLCHAIN=local`:
/// asking must not download anything.
fn version(program: &Path) -> Option<String> {
    let output = Command::new(program)
        .args(["env", "GOVERSION"])
        .env("GOTOOLCHAIN", "local")
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The `go` on PATH, with its version, when it is new enough.
fn usable_on_path() -> Option<(PathBuf, String)> {
    let go = PathBuf::from("go");
    let v = version(&go)?;
    (release(&v)? >= OLDEST).then_some((go, v))
}

fn name() -> String {
    format!("go-{}", GO_VERSION.trim_start_matches("go"))
}

pub(super) fn go(tools: &Toolchains) -> Result<PathBuf, GuestBuildError> {
    if let Some((go, _)) = usable_on_path() {
        return Ok(go);
    }
    let platform = platform().ok_or_else(|| {
        GuestBuildError::Toolchain(format!(
            "no Go 1.24+ on PATH, and weir installs Go only on Linux and macOS (amd64, arm64): install Go from https://go.dev/dl ({} {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    })?;
    let what = format!("Go {GO_VERSION} (from the Go module proxy)");
    let dir = tools.install(&name(), &what, |dir| download(&platform, dir))?;
    Ok(dir.join("bin/go"))
}

/// The proxy to take the toolchain from: the first of `$GOPROXY` that is
/// a URL, as the go command would, else proxy.golang.org.
fn proxy() -> String {
    std::env::var("GOPROXY")
        .ok()
        .and_then(|list| {
            list.split([',', '|'])
                .map(str::trim)
                .find(|p| p.starts_with("https://") || p.starts_with("http://"))
                .map(|p| p.trim_end_matches('/').to_string())
        })
        .unwrap_or_else(|| "https://proxy.golang.org".into())
}

fn download(platform: &str, dir: &Path) -> Result<(), GuestBuildError> {
    let failed = |why: String| GuestBuildError::Toolchain(format!("installing Go: {why}"));
    let digest = DIGESTS
        .iter()
        .find(|(p, _)| *p == platform)
        .map(|(_, d)| *d)
        .ok_or_else(|| failed(format!("no pinned digest for {platform}")))?;
    let module = format!("v0.0.1-{GO_VERSION}.{platform}");
    let url = format!("{}/golang.org/toolchain/@v/{module}.zip", proxy());
    // The system's trust store: machines behind a proxy of their own
    // trust its certificate there, as `go` and curl do.
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder().tls_config(tls).build().into();
    let mut response = agent
        .get(&url)
        .call()
        .map_err(|e| failed(format!("{url}: {e}")))?;
    let mut zip_file = tempfile::tempfile().map_err(|err| GuestBuildError::Io {
        path: std::env::temp_dir(),
        err,
    })?;
    let mut body = response.body_mut().with_config().limit(MAX_ZIP).reader();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = body
            .read(&mut buf)
            .map_err(|e| failed(format!("{url}: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        zip_file
            .write_all(&buf[..n])
            .map_err(|e| failed(format!("writing the download: {e}")))?;
    }
    let got = hex(&hasher.finalize());
    if got != digest {
        return Err(failed(format!(
            "{url} has SHA-256 {got}, not the pinned {digest}; nothing was installed"
        )));
    }
    unpack(zip_file, &format!("golang.org/toolchain@{module}/"), dir).map_err(failed)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Extract the zip's entries under `prefix` into `dir`, with their Unix
/// modes (the `go` binary and its tools are executables).
fn unpack(file: std::fs::File, prefix: &str, dir: &Path) -> Result<(), String> {
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("reading the zip: {e}"))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| e.to_string())?;
        // enclosed_name refuses absolute paths and `..`.
        let Some(path) = entry.enclosed_name() else {
            return Err(format!("the zip holds an unsafe path {:?}", entry.name()));
        };
        let Ok(relative) = path.strip_prefix(prefix) else {
            return Err(format!("the zip holds {:?} outside {prefix}", entry.name()));
        };
        let target = dir.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| e.to_string())?;
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let mut out = std::fs::File::create(&target).map_err(|e| e.to_string())?;
        std::io::copy(&mut entry, &mut out).map_err(|e| e.to_string())?;
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode & 0o755))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

pub(super) fn readiness(tools: &Toolchains) -> Readiness {
    if let Some((_, v)) = usable_on_path() {
        return Readiness::Ready(format!("{v} on PATH"));
    }
    if let Some(dir) = tools.installed(&name()) {
        return Readiness::Ready(format!("{GO_VERSION} at {}", dir.join("bin/go").display()));
    }
    let found = version(Path::new("go"))
        .map(|v| format!("{v} on PATH is older than Go 1.24; "))
        .unwrap_or_default();
    match platform() {
        Some(_) => Readiness::Installable(format!(
            "{found}{GO_VERSION} is installed from the Go module proxy on the first build"
        )),
        None => Readiness::Missing(format!("{found}install Go 1.24+ from https://go.dev/dl")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_read_from_go_version_strings() {
        assert_eq!(release("go1.26.8"), Some((1, 26)));
        assert_eq!(release("go1.24rc1"), Some((1, 24)));
        assert_eq!(release("go1.9"), Some((1, 9)));
        assert_eq!(release("devel +abc"), None);
        assert!(release("go1.23.4").unwrap() < OLDEST);
        assert!(release("go1.100.0").unwrap() > OLDEST);
    }

    #[test]
    fn a_zip_entry_outside_the_toolchain_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut zip_file = tempfile::tempfile().unwrap();
        {
            let mut w = zip::ZipWriter::new(&mut zip_file);
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .unix_permissions(0o755);
            w.start_file(
                "golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64/bin/go",
                options,
            )
            .unwrap();
            w.write_all(b"#!/bin/sh\n").unwrap();
            w.start_file("elsewhere/evil", options).unwrap();
            w.write_all(b"x").unwrap();
            w.finish().unwrap();
        }
        let err = unpack(
            zip_file,
            "golang.org/toolchain@v0.0.1-go1.26.8.linux-amd64/",
            dir.path(),
        )
        .unwrap_err();
        assert!(err.contains("elsewhere/evil"), "{err}");
        assert!(!dir.path().join("elsewhere").exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("bin/go"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}
