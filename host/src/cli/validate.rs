//! `weir validate FILE.wasm`

use std::path::PathBuf;
use std::process::ExitCode;

use weir_runtime::{CacheOutcome, PACKAGE, Runtime, WORLD};

#[derive(clap::Args)]
pub struct Args {
    /// The component to check.
    file: PathBuf,
    /// Allow an extra imported interface (repeatable), e.g. wasi:sockets/tcp.
    #[arg(long = "grant", value_name = "INTERFACE")]
    grants: Vec<String>,
}

pub fn run(runtime: &Runtime, args: Args) -> anyhow::Result<ExitCode> {
    let component = match runtime.load(&args.file, &args.grants) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let info = component.info();
    let ms = info.load_time.as_secs_f64() * 1000.0;
    let load = match info.cache {
        CacheOutcome::Hit => format!("loaded precompiled code from the cache in {ms:.1} ms"),
        CacheOutcome::Miss => format!("compiled in {ms:.1} ms (cached for next time)"),
        CacheOutcome::Disabled => format!("compiled in {ms:.1} ms (cache disabled)"),
    };
    println!("component: {}", info.path.display());
    println!("size:      {} bytes, sha256 {}", info.size, info.sha256);
    println!("package:   {PACKAGE}");
    if info.stateful {
        println!("world:     stateful-{WORLD} (keyed state, timers, event time)");
    } else {
        println!("world:     {WORLD}");
    }
    println!("exports:   {}", info.interfaces.exports.join(", "));
    println!("imports:   {}", info.interfaces.imports.join(", "));
    println!("load:      {load}");
    println!("runnable:  yes");
    Ok(ExitCode::SUCCESS)
}
