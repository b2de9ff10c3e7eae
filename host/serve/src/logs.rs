//! Guest logs per pipeline for `weir serve`: the last lines of each
//! pipeline's guests (their `log` calls and stdout/stderr, after the guest
//! log rate limit) kept in memory for `GET .../logs`, and pushed to
//! followers as they come. Guest labels start `<tenant>/<pipeline>/`, which
//! is how a line finds its pipeline. Nothing here is written to disk: the
//! service's own stderr keeps the full stream.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use tokio::sync::broadcast;
use tracing_subscriber::layer::{Context, Layer};
use weir_runtime::{GUEST_LOG_TARGET, GuestEvent};

/// Lines kept per pipeline.
pub const KEPT_LINES: usize = 1000;

#[derive(Debug, Clone, Serialize)]
pub struct LogLine {
    /// Increasing per pipeline, from 1, for as long as the service runs.
    pub seq: u64,
    /// RFC 3339, milliseconds.
    pub time: String,
    pub level: String,
    /// The guest instance (`<tenant>/<pipeline>/<task>`).
    pub guest: String,
    /// `log`, `stdout` or `stderr`.
    pub stream: String,
    pub message: String,
}

pub struct PipelineLog {
    lines: Mutex<(u64, VecDeque<LogLine>)>,
    live: broadcast::Sender<LogLine>,
}

impl PipelineLog {
    /// The last `n` lines.
    pub fn tail(&self, n: usize) -> Vec<LogLine> {
        let g = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        g.1.iter()
            .skip(g.1.len().saturating_sub(n))
            .cloned()
            .collect()
    }

    /// The last `n` lines and every line after them, without a gap.
    pub fn follow(&self, n: usize) -> (Vec<LogLine>, broadcast::Receiver<LogLine>) {
        let g = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let rx = self.live.subscribe();
        let tail =
            g.1.iter()
                .skip(g.1.len().saturating_sub(n))
                .cloned()
                .collect();
        (tail, rx)
    }

    fn push(&self, mut line: LogLine) {
        let mut g = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        line.seq = g.0;
        if g.1.len() == KEPT_LINES {
            g.1.pop_front();
        }
        g.1.push_back(line.clone());
        // No followers is fine.
        let _ = self.live.send(line);
    }
}

type Key = (String, String);

fn registry() -> &'static Mutex<HashMap<Key, Arc<PipelineLog>>> {
    static LOGS: OnceLock<Mutex<HashMap<Key, Arc<PipelineLog>>>> = OnceLock::new();
    LOGS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Start keeping `tenant`'s `pipeline`'s lines (kept if it already was).
pub fn register(tenant: &str, pipeline: &str) -> Arc<PipelineLog> {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((tenant.to_string(), pipeline.to_string()))
        .or_insert_with(|| {
            Arc::new(PipelineLog {
                lines: Mutex::new((0, VecDeque::new())),
                live: broadcast::channel(256).0,
            })
        })
        .clone()
}

pub fn get(tenant: &str, pipeline: &str) -> Option<Arc<PipelineLog>> {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(tenant.to_string(), pipeline.to_string()))
        .cloned()
}

/// Forget a deleted pipeline's lines; its followers' streams end.
pub fn forget(tenant: &str, pipeline: &str) {
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(tenant.to_string(), pipeline.to_string()));
}

/// Routes guest events to their pipeline's `PipelineLog`.
pub struct GuestLogLayer;

impl<S: tracing::Subscriber> Layer<S> for GuestLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != GUEST_LOG_TARGET {
            return;
        }
        let f = GuestEvent::of(event);
        let Some(guest) = f.guest else { return };
        let mut parts = guest.splitn(3, '/');
        let (Some(tenant), Some(pipeline)) = (parts.next(), parts.next()) else {
            return;
        };
        let Some(log) = get(tenant, pipeline) else {
            return;
        };
        log.push(LogLine {
            seq: 0,
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            level: event.metadata().level().to_string(),
            stream: f.stream.unwrap_or_else(|| "log".into()),
            guest,
            message: f.text,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::prelude::*;

    #[test]
    fn guest_lines_reach_their_pipeline_only() {
        let subscriber = tracing_subscriber::registry().with(GuestLogLayer);
        let log = register("t-logs", "p");
        let (_, mut rx) = log.follow(10);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "weir::guest", guest = "t-logs/p/source-0/task-0", "hello {}", 1);
            tracing::warn!(target: "weir::guest", guest = "t-logs/p/task-1", stream = "stderr", "boom");
            tracing::info!(target: "weir::guest", guest = "t-logs/other/task-0", "not ours");
            tracing::info!(target: "weir::engine", guest = "t-logs/p/task-0", "not a guest");
        });
        let lines = log.tail(10);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!((lines[0].seq, lines[0].message.as_str()), (1, "hello 1"));
        assert_eq!(lines[0].stream, "log");
        assert_eq!(
            (lines[1].level.as_str(), lines[1].stream.as_str()),
            ("WARN", "stderr")
        );
        assert_eq!(rx.try_recv().unwrap().message, "hello 1");
        assert_eq!(log.tail(1)[0].message, "boom");
        forget("t-logs", "p");
        assert!(get("t-logs", "p").is_none());
    }
}
