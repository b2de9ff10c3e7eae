//! The `weir` command line.

mod cli;

use std::process::ExitCode;

/// mimalloc: the stateful paths make many small keys and values, and
/// glibc's malloc spent a third of W3's time on them (BENCHMARKS.md, W3).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    weir::allocator::keep_batch_buffers();
    match cli::run() {
        Ok(code) => code,
        // A closed stdout (`weir log read ... | head`) is a normal way to stop.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
