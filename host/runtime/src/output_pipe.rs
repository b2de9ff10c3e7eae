//! Guest stdout/stderr: never the host's own stdio. Complete lines go to the
//! pipeline's log (rate-limited). A language runtime's dying words on
//! stderr (a Rust or Go panic) are held back instead: when the call traps,
//! they become the trap's one-line reason ([`crate::panic_report`]), so
//! the user reads the panic once, where the record's failure is reported,
//! not again in the log for every retry. The last few KiB of a call are
//! kept too, for a trap without such a report.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

const TAIL_BYTES: usize = 4096;
/// Lines of a held report; a longer one keeps its first lines (the
/// message and the innermost frames).
const REPORT_LINES: usize = 64;
/// Blank lines held while waiting to see whether a report follows.
const HELD_BLANKS: u32 = 4;
/// Lines forwarded to the log per second per stream; the rest are counted.
pub(crate) const LINES_PER_SECOND: u32 = 100;

/// What a trapped call left on stderr.
pub(crate) enum LastWords {
    /// A language runtime's panic report, summarized.
    Report(String),
    /// Other output, its lines joined.
    Printed(String),
    Nothing,
}

#[derive(Clone)]
pub(crate) struct GuestOutput {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    stream: &'static str,
    /// stderr: keeps the tail and holds reports, for a trap's reason.
    for_failures: bool,
    label: Arc<str>,
    tail: VecDeque<u8>,
    line: Vec<u8>,
    window_start: Instant,
    lines_in_window: u32,
    suppressed: u64,
    /// A runtime's report being held (stderr only); empty when none.
    report: Vec<String>,
    /// Blank lines not logged yet: Rust's hook prints one before a panic.
    blanks: u32,
}

impl GuestOutput {
    pub(crate) fn new(stream: &'static str, label: Arc<str>) -> Self {
        GuestOutput {
            inner: Arc::new(Mutex::new(Inner {
                stream,
                for_failures: stream == "stderr",
                label,
                tail: VecDeque::with_capacity(TAIL_BYTES),
                line: Vec::new(),
                window_start: Instant::now(),
                lines_in_window: 0,
                suppressed: 0,
                report: Vec::new(),
                blanks: 0,
            })),
        }
    }

    /// A call starts: what the previous one held back without trapping
    /// goes to the log after all, and the tail starts afresh.
    pub(crate) fn begin_call(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.release_held();
        inner.tail.clear();
    }

    /// The call trapped: the held report's summary, else the call's last
    /// bytes as one trimmed line.
    pub(crate) fn take_failure(&self) -> LastWords {
        let mut inner = self.inner.lock().unwrap();
        if !inner.line.is_empty() && !inner.report.is_empty() {
            let partial = String::from_utf8_lossy(&inner.line).into_owned();
            inner.line.clear();
            inner.push_report(partial);
        }
        inner.blanks = 0;
        let report = std::mem::take(&mut inner.report);
        let bytes: Vec<u8> = inner.tail.drain(..).collect();
        if let Some(summary) = crate::panic_report::summarize(&report) {
            return LastWords::Report(summary);
        }
        let text = String::from_utf8_lossy(&bytes);
        let printed = text
            .split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ");
        if printed.is_empty() {
            LastWords::Nothing
        } else {
            LastWords::Printed(printed)
        }
    }
}

impl Inner {
    fn write(&mut self, buf: &[u8]) {
        if self.for_failures {
            let keep = &buf[buf.len().saturating_sub(TAIL_BYTES)..];
            let overflow = (self.tail.len() + keep.len()).saturating_sub(TAIL_BYTES);
            self.tail.drain(..overflow);
            self.tail.extend(keep);
        }
        for &b in buf {
            if b == b'\n' {
                self.emit_line();
            } else if self.line.len() < TAIL_BYTES {
                self.line.push(b);
            }
        }
    }

    fn emit_line(&mut self) {
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if !self.for_failures {
            self.log(&line);
        } else if !self.report.is_empty() {
            self.push_report(line);
        } else if line.trim().is_empty() && self.blanks < HELD_BLANKS {
            self.blanks += 1;
        } else if crate::panic_report::starts_report(&line) {
            self.blanks = 0;
            self.push_report(line);
        } else {
            self.release_held();
            self.log(&line);
        }
    }

    fn push_report(&mut self, line: String) {
        if self.report.len() < REPORT_LINES {
            self.report.push(line);
        }
    }

    /// Log what was held: blank lines, and a report no trap claimed.
    fn release_held(&mut self) {
        for _ in 0..std::mem::take(&mut self.blanks) {
            self.log("");
        }
        for line in std::mem::take(&mut self.report) {
            self.log(&line);
        }
    }

    fn log(&mut self, line: &str) {
        let now = Instant::now();
        if now.duration_since(self.window_start).as_secs() >= 1 {
            if self.suppressed > 0 {
                tracing::warn!(target: crate::GUEST_LOG_TARGET, guest = %self.label, stream = self.stream,
                    "{} guest output lines suppressed by the rate limit", self.suppressed);
            }
            self.window_start = now;
            self.lines_in_window = 0;
            self.suppressed = 0;
        }
        if self.lines_in_window < LINES_PER_SECOND {
            self.lines_in_window += 1;
            tracing::info!(target: crate::GUEST_LOG_TARGET, guest = %self.label, stream = self.stream, "{line}");
        } else {
            self.suppressed += 1;
        }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.inner.lock().unwrap().write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(out: &GuestOutput, text: &str) {
        out.inner.lock().unwrap().write(text.as_bytes());
    }

    #[test]
    fn a_panic_report_becomes_the_failure_and_is_held_from_the_log() {
        let out = GuestOutput::new("stderr", Arc::from("t"));
        out.begin_call();
        write(
            &out,
            "working\n\nthread '<unnamed>' (1) panicked at src/lib.rs:4:5:\ncannot handle boom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
        );
        assert!(!out.inner.lock().unwrap().report.is_empty());
        match out.take_failure() {
            LastWords::Report(s) => assert_eq!(s, "panicked at src/lib.rs:4:5: cannot handle boom"),
            _ => panic!("no report"),
        }
        // The next call starts clean.
        out.begin_call();
        assert!(matches!(out.take_failure(), LastWords::Nothing));
    }

    #[test]
    fn other_output_is_the_failure_when_there_is_no_report() {
        let out = GuestOutput::new("stderr", Arc::from("t"));
        out.begin_call();
        write(&out, "first\nsecond\n");
        match out.take_failure() {
            LastWords::Printed(s) => assert_eq!(s, "first | second"),
            _ => panic!("no printed lines"),
        }
    }

    #[test]
    fn a_report_no_trap_claims_is_released_at_the_next_call() {
        let out = GuestOutput::new("stderr", Arc::from("t"));
        write(&out, "panic: only a word\n");
        out.begin_call();
        let inner = out.inner.lock().unwrap();
        assert!(inner.report.is_empty() && inner.tail.is_empty());
    }
}
