//! Fault injection for crash tests: `WEIR_FAULT=<point>`,
//! `WEIR_FAULT=<point>@<batch>` or `WEIR_FAULT=<point>#<n>` makes the
//! process SIGKILL itself when it reaches that point (of that batch, or for
//! the n-th time in this process), exactly like a machine dying there. The
//! `#n` form suits continuous mode, whose epoch ids depend on timing.
//!
//! Points: `after-offsets-write`, `mid-sink`, `after-sink-commit`,
//! `after-commit-write`, and `after-state-write` (a stateful task wrote its
//! state version for the batch, before the sinks). Group mode adds
//! `group-before-commit` (output computed, state written, transaction not
//! begun), `group-mid-transaction` (records produced, offsets not yet sent)
//! and `group-after-commit`.
//!
//! Compiled in only with the `fault-injection` cargo feature (the test
//! suite turns it on); otherwise every point is an empty function, so a
//! release weir cannot be told to kill itself.

#[cfg(feature = "fault-injection")]
use std::sync::OnceLock;
#[cfg(feature = "fault-injection")]
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "fault-injection")]
enum When {
    Always,
    Batch(u64),
    Nth(u64),
}

#[cfg(feature = "fault-injection")]
fn configured() -> Option<&'static (String, When)> {
    static FAULT: OnceLock<Option<(String, When)>> = OnceLock::new();
    FAULT
        .get_or_init(|| {
            let spec = std::env::var("WEIR_FAULT").ok()?;
            if let Some((p, n)) = spec.split_once('#') {
                return Some((p.to_string(), When::Nth(n.parse().ok()?)));
            }
            Some(match spec.split_once('@') {
                Some((p, b)) => (p.to_string(), When::Batch(b.parse().ok()?)),
                None => (spec, When::Always),
            })
        })
        .as_ref()
}

/// Die here if the fault configuration says so.
#[cfg(feature = "fault-injection")]
pub fn point(name: &str, batch: u64) {
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let Some((p, when)) = configured() else {
        return;
    };
    if p != name {
        return;
    }
    let hit = match when {
        When::Always => true,
        When::Batch(b) => *b == batch,
        When::Nth(n) => SEEN.fetch_add(1, Ordering::SeqCst) + 1 == *n,
    };
    if hit {
        eprintln!("weir: fault injection: SIGKILL at {name} of batch {batch}");
        // SAFETY: plain libc calls on our own pid.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Without the `fault-injection` feature there are no faults.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn point(_name: &str, _batch: u64) {}

/// Whether this build can inject faults (`WEIR_FAULT` is ignored otherwise).
pub const ENABLED: bool = cfg!(feature = "fault-injection");
