//! Fault injection for crash tests: `WEIR_FAULT=<point>` or
//! `WEIR_FAULT=<point>@<batch>` makes the process SIGKILL itself when it
//! reaches that point (of that batch), exactly like a machine dying there.
//!
//! Points: `after-offsets-write`, `mid-sink`, `after-sink-commit`,
//! `after-commit-write`.

use std::sync::OnceLock;

fn configured() -> Option<&'static (String, Option<u64>)> {
    static FAULT: OnceLock<Option<(String, Option<u64>)>> = OnceLock::new();
    FAULT
        .get_or_init(|| {
            let spec = std::env::var("WEIR_FAULT").ok()?;
            Some(match spec.split_once('@') {
                Some((p, b)) => (p.to_string(), b.parse().ok()),
                None => (spec, None),
            })
        })
        .as_ref()
}

/// Die here if the fault configuration says so.
pub fn point(name: &str, batch: u64) {
    if let Some((p, b)) = configured()
        && p == name
        && b.is_none_or(|b| b == batch)
    {
        eprintln!("weir: fault injection: SIGKILL at {name} of batch {batch}");
        // SAFETY: plain libc calls on our own pid.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}
