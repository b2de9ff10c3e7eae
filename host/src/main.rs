//! The `weir` command line.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::init_logging();
    match cli::run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
