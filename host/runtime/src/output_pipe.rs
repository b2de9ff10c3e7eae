//! Guest stdout/stderr: never the host's own stdio. Complete lines go to the
//! pipeline's log (rate-limited), and the last few KiB are kept so a trap can
//! be reported together with what the guest printed (e.g. a Rust panic message).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

const TAIL_BYTES: usize = 4096;
/// Lines forwarded to the log per second per stream; the rest are counted.
pub(crate) const LINES_PER_SECOND: u32 = 100;

#[derive(Clone)]
pub(crate) struct GuestOutput {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    stream: &'static str,
    label: Arc<str>,
    tail: VecDeque<u8>,
    line: Vec<u8>,
    window_start: Instant,
    lines_in_window: u32,
    suppressed: u64,
}

impl GuestOutput {
    pub(crate) fn new(stream: &'static str, label: Arc<str>) -> Self {
        GuestOutput {
            inner: Arc::new(Mutex::new(Inner {
                stream,
                label,
                tail: VecDeque::with_capacity(TAIL_BYTES),
                line: Vec::new(),
                window_start: Instant::now(),
                lines_in_window: 0,
                suppressed: 0,
            })),
        }
    }

    /// The last bytes written, as one trimmed line, and clear them.
    pub(crate) fn take_tail(&self) -> String {
        let mut inner = self.inner.lock().unwrap();
        let bytes: Vec<u8> = inner.tail.drain(..).collect();
        let text = String::from_utf8_lossy(&bytes);
        text.split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    }
}

impl Inner {
    fn write(&mut self, buf: &[u8]) {
        for &b in buf {
            if self.tail.len() == TAIL_BYTES {
                self.tail.pop_front();
            }
            self.tail.push_back(b);
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
            let line = String::from_utf8_lossy(&self.line);
            tracing::info!(target: crate::GUEST_LOG_TARGET, guest = %self.label, stream = self.stream, "{line}");
        } else {
            self.suppressed += 1;
        }
        self.line.clear();
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
