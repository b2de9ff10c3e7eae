//! Shared helpers for the end-to-end tests and benchmarks: guests are built
//! from source here (once per test process; cargo's own lock serialises
//! concurrent test binaries), never checked in.
//!
//! A crate of its own so the e2e tests and every bench share one copy. It
//! runs inside the host package's test and bench binaries, so it finds
//! cargo's target directory and the `weir` binary from the running
//! executable (`<target>/<profile>/deps/<test>`), as cargo lays them out.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The tests and benches that link this crate allocate as the `weir`
/// binary does (see `host/src/main.rs`): the benches measure what `weir`
/// runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod engine;
mod files_run;
#[cfg(target_os = "linux")]
pub mod powerfs;
mod s3;
mod serve;
mod usage;
pub use engine::{batch, guarded_guest, letter_batches, runtime, uppercase_log_query, values};
pub use files_run::{FilesRun, run_files_to_files};
pub use s3::{s3_bucket, s3_endpoint, s3_env, s3_keys, s3_options};
pub use serve::Serve;
pub use usage::{ProcessUsage, process_usage};

use weir_engine::RecordBatch;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("tests/testkit/ is two levels down")
        .to_path_buf()
}

/// `<target>/<profile>` of the running test or bench binary.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("a test binary lives in <target>/<profile>/deps")
        .to_path_buf()
}

/// Cargo's scratch directory for tests (`CARGO_TARGET_TMPDIR`).
pub fn target_tmpdir() -> PathBuf {
    profile_dir()
        .parent()
        .expect("<target>/<profile> has a parent")
        .join("tmp")
}

/// The `weir` binary cargo built beside the tests (`CARGO_BIN_EXE_weir`).
pub fn weir_bin() -> PathBuf {
    profile_dir().join("weir")
}

fn guest_target_dir() -> PathBuf {
    target_tmpdir().join("guests")
}

/// Build one guest workspace for wasm32-wasip2 (release, simd128 via the
/// workspace's .cargo/config.toml).
fn build_workspace(dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--target", "wasm32-wasip2", "--quiet"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", guest_target_dir())
        // Flags meant for the host build must not leak into the guest build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .expect("running cargo to build guests");
    assert!(
        status.success(),
        "building guests in {} failed (is the wasm32-wasip2 target installed? `rustup target add wasm32-wasip2`)",
        dir.display()
    );
}

/// Path of a guest component by crate name, e.g. `uppercase`, `misbehave`.
pub fn guest(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_workspace(&repo_root().join("examples/rust"));
        build_workspace(&repo_root().join("tests/guests"));
    });
    let path = guest_target_dir()
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    let path = if path.exists() {
        path
    } else {
        path.with_file_name(format!("{name}.wasm"))
    };
    assert!(
        path.exists(),
        "guest {name} was not built at {}",
        path.display()
    );
    path
}

/// The file of a `weir new --lang` project that holds the transform.
pub fn own_file(lang: &str) -> &'static str {
    match lang {
        "python" => "app.py",
        "js" => "app.js",
        "go" => "main.go",
        "c" => "src/transform.c",
        other => panic!("no scaffold file for {other}"),
    }
}

/// What a pipeline grants a component in `lang`: CPython's runtime imports
/// wasi:sockets (the network stays off).
pub fn grants(lang: &str) -> &'static [&'static str] {
    if lang == "python" {
        &["wasi:sockets"]
    } else {
        &[]
    }
}

/// [`grants`] as the `[transform]` line of a pipeline file.
pub fn grants_line(lang: &str) -> String {
    let list: Vec<String> = grants(lang).iter().map(|g| format!("\"{g}\"")).collect();
    format!("grants = [{}]\n", list.join(", "))
}

/// A `weir new --lang lang name` project in `dir`, with `example` (a file
/// under `examples/<lang>/`) as its transform when given, built by `weir
/// build` as a user would; the component's path.
pub fn scaffold(dir: &Path, lang: &str, name: &str, example: Option<&str>) -> PathBuf {
    polyglot_tools(lang);
    let o = weir()
        .args(["new", "--lang", lang, name])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let project = dir.join(name);
    if let Some(e) = example {
        let text =
            std::fs::read_to_string(repo_root().join("examples").join(lang).join(e)).unwrap();
        // Go examples import their bindings by a project named golden's module path.
        let module = format!("example.com/{}/", name.replace('-', "_"));
        std::fs::write(
            project.join(own_file(lang)),
            text.replace("example.com/golden/", &module),
        )
        .unwrap();
    }
    let o = weir().arg("build").current_dir(&project).output().unwrap();
    assert!(
        o.status.success(),
        "{lang} {example:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    project.join(format!("{name}.wasm"))
}

/// For Python and JavaScript: componentize-py and -js, which
/// scripts/build-polyglot installs under [`tools_dir`] (where `weir()` points).
pub fn polyglot_tools(lang: &str) {
    if matches!(lang, "python" | "js") {
        polyglot_guest("uppercase-py.wasm");
    }
}

/// Python and JavaScript smoke guests, built by scripts/build-polyglot.
pub fn polyglot_guest(file: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let out = target_tmpdir().join("polyglot");
    BUILT.get_or_init(|| {
        let status = Command::new(repo_root().join("scripts/build-polyglot"))
            .arg(&out)
            .status()
            .expect("running scripts/build-polyglot");
        assert!(
            status.success(),
            "scripts/build-polyglot failed; see its output above"
        );
    });
    out.join(file)
}

/// `n` JSON events `{"key":"k<j>","ts":..}` over `keys` keys, `step` ms
/// apart and out of order by up to `jitter` ms, in `dir/events.jsonl`; and
/// their tumbling `size` windows' counts per key, computed here as the
/// reference, in `dir/expect.jsonl` (as `weir test` prints them). Returns
/// both paths.
pub fn window_events(
    dir: &Path,
    n: i64,
    keys: i64,
    step: i64,
    jitter: i64,
    size: i64,
) -> (PathBuf, PathBuf) {
    let mut lines = String::new();
    let mut reference: std::collections::BTreeMap<(String, i64), u64> = Default::default();
    for i in 0..n {
        let key = format!("k{}", (i * 7) % keys);
        let ts = 1_700_000_000_000 + i * step + (i * 7919) % jitter;
        lines.push_str(&format!("{{\"key\":\"{key}\",\"ts\":{ts}}}\n"));
        *reference
            .entry((key, ts - ts.rem_euclid(size)))
            .or_default() += 1;
    }
    let want: String = reference
        .iter()
        .map(|((k, start), n)| {
            let end = start + size;
            format!("{{\"key\":\"{k}\",\"start\":{start},\"end\":{end},\"count\":{n}}}\n")
        })
        .collect();
    let (input, expect) = (dir.join("events.jsonl"), dir.join("expect.jsonl"));
    std::fs::write(&input, lines).unwrap();
    std::fs::write(&expect, want).unwrap();
    (input, expect)
}

/// The `weir` binary under test.
pub fn weir() -> Command {
    let mut c = Command::new(weir_bin());
    c.env("WEIR_CACHE_DIR", target_tmpdir().join("component-cache"));
    // Anything weir installs for a build stays out of the user's home.
    c.env("WEIR_TOOLCHAINS_DIR", target_tmpdir().join("toolchains"));
    let tools = tools_dir();
    c.env(
        "WEIR_COMPONENTIZE_PY",
        tools.join("venv/bin/componentize-py"),
    );
    c.env(
        "WEIR_COMPONENTIZE_JS",
        tools.join("node/node_modules/.bin/componentize-js"),
    );
    c
}

/// Where scripts/build-polyglot installs componentize-py and -js: the
/// same rule as the script (`WEIR_TOOLS_DIR`, else `.tools/` in the repo).
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("WEIR_TOOLS_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => repo_root().join(".tools"),
    }
}

/// `weir run DIR/p.toml` without progress, optionally with a fault
/// injected (`WEIR_FAULT`); stdout discarded, stderr captured.
pub fn run_pipeline(dir: &Path, fault: Option<&str>) -> std::process::Output {
    let mut c = weir();
    c.arg("run")
        .arg(dir.join("p.toml"))
        .args(["--progress", "none"])
        .stdout(std::process::Stdio::null());
    if let Some(f) = fault {
        c.env("WEIR_FAULT", f);
    }
    c.output().unwrap()
}

/// `weir run DIR/p.toml` without progress; a continuous pipeline stops once
/// idle for `idle`. Stdout discarded, stderr captured.
pub fn run_command(dir: &Path, idle: Option<&str>) -> Command {
    let mut c = weir();
    c.arg("run")
        .arg(dir.join("p.toml"))
        .args(["--progress", "none"]);
    if let Some(idle) = idle {
        c.args(["--exit-when-idle", idle]);
    }
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    c
}

/// `weir run PIPELINE --progress json`: each batch's (or epoch's) progress
/// as one JSON line on stdout (see [`progress_of`]).
pub fn progress_run(pipeline: &Path) -> Command {
    let mut c = weir();
    c.arg("run").arg(pipeline).args(["--progress", "json"]);
    c
}

/// Run `c` (a [`progress_run`]) to completion, panicking with its stderr
/// unless it exits 0: its progress records in order, and its stderr.
pub fn progress_of(mut c: Command) -> (Vec<serde_json::Value>, String) {
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "weir failed: {stderr}");
    let progress = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("progress line {l:?}: {e}")))
        .collect();
    (progress, stderr)
}

/// Run `c` to completion; panics with its stderr unless it exits 0.
pub fn run_ok(mut c: Command) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "weir failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The committed values of embedded-log topic `topic` under `log`,
/// partition by partition; `None` when the topic does not exist.
pub fn topic_values(log: &Path, topic: &str) -> Option<Vec<String>> {
    let mut t = weir_log::Topic::open(log, topic).ok()?;
    let mut got = Vec::new();
    for (p, end) in t.committed_ends().unwrap().into_iter().enumerate() {
        let mut b = RecordBatch::new(p as u32);
        t.read(p as u32, 0, end, &mut b).unwrap();
        got.extend(
            b.iter()
                .map(|r| String::from_utf8_lossy(r.value).into_owned()),
        );
    }
    Some(got)
}

/// A fixed-seed xorshift generator for "random" kill moments: varied, but
/// the same on every run.
pub fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// The benchmarks' native baseline: the per-record loop the guest SDK runs
/// (copy the value into the output buffer in place, uppercase it), as a
/// native transform over the engine's columnar batches.
pub fn native_uppercase(
    input: &RecordBatch,
    out: &mut weir_engine::OutputBatch,
) -> Result<(), weir_engine::TransformError> {
    out.reserve(input.len(), input.columns().data_len());
    for r in input.iter() {
        out.push_mapped(|values| {
            let start = values.len();
            values.extend_from_slice(r.value);
            values[start..].make_ascii_uppercase();
        });
    }
    Ok(())
}

/// `c` set up to build a Rust guest project (`weir build`, `cargo test`):
/// flags meant for the host build removed, so they do not leak into the
/// guest's, and a target directory the tests share.
pub fn rust_guest_build(c: &mut Command) -> &mut Command {
    c.env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env("CARGO_TARGET_DIR", target_tmpdir().join("scaffold-target"))
}
