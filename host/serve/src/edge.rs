//! The service's HTTP edge: what a client, authenticated or not, can hold
//! of the server. Each connection has a deadline for its request headers
//! (slowloris) and for idleness, the server holds at most so many
//! connections in all and from one client address (file descriptors are
//! shared with the pipelines), and a shutdown waits a bounded grace for
//! open requests (a followed log stream never ends on its own).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::response::IntoResponse as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt as _;

/// The edge's limits (`weir serve` flags).
#[derive(Debug, Clone, Copy)]
pub struct EdgeLimits {
    /// A request's headers must arrive within this of its first byte.
    pub header_timeout: Duration,
    /// A connection with no request in flight and no bytes moving for this
    /// long is closed.
    pub idle_timeout: Duration,
    /// Connections held at once, in all and from one client address; more
    /// are closed as soon as they are accepted.
    pub max_connections: usize,
    pub max_connections_per_client: usize,
    /// A request (its body read and its answer computed; not a streamed
    /// answer's body) must finish within this, or gets 408.
    pub request_timeout: Duration,
    /// How long a shutdown waits for open requests before closing them.
    pub shutdown_grace: Duration,
}

impl Default for EdgeLimits {
    fn default() -> Self {
        EdgeLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: default_max_connections(),
            max_connections_per_client: 256,
            request_timeout: Duration::from_secs(300),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

/// Raise the open-file limit to its hard limit, and hold at most a quarter
/// of it (at most 4096) as connections: the rest is the pipelines'.
fn default_max_connections() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 256;
        }
        let want = lim.rlim_max.min(1 << 20);
        if want > lim.rlim_cur {
            let raised = libc::rlimit {
                rlim_cur: want,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = want;
            }
        }
        lim.rlim_cur
    };
    ((soft / 4) as usize).clamp(64, 4096)
}

/// Connections held now, in all and per client address.
#[derive(Default)]
struct Held {
    total: AtomicUsize,
    by_client: Mutex<HashMap<IpAddr, usize>>,
    refused: AtomicU64,
}

/// One held connection; released when dropped.
struct Slot {
    held: Arc<Held>,
    client: IpAddr,
}

impl Held {
    fn take(self: &Arc<Self>, client: IpAddr, limits: &EdgeLimits) -> Option<Slot> {
        let mut by = self.by_client.lock().unwrap_or_else(|e| e.into_inner());
        let mine = by.get(&client).copied().unwrap_or(0);
        if mine >= limits.max_connections_per_client
            || self.total.load(Ordering::Relaxed) >= limits.max_connections
        {
            return None;
        }
        by.insert(client, mine + 1);
        self.total.fetch_add(1, Ordering::Relaxed);
        Some(Slot {
            held: self.clone(),
            client,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut by = self
            .held
            .by_client
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = by.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                by.remove(&self.client);
            }
        }
        self.held.total.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's socket that notes when bytes last moved.
struct Watched {
    stream: TcpStream,
    /// Milliseconds since `epoch` of the last read or write.
    last: Arc<AtomicU64>,
    epoch: Instant,
}

impl Watched {
    fn touch(&self) {
        self.last
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Serve `app` on `listener` under `limits` until `shutdown` completes,
/// then give open connections at most `limits.shutdown_grace`.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: EdgeLimits,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let held = Arc::new(Held::default());
    let (closing, closed) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors, say: wait rather than spin.
                    tracing::warn!("serve: accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(slot) = held.take(peer.ip(), &limits) else {
            let n = held.refused.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    "serve: refused {n} connection(s) so far over the connection limits (latest from {peer})"
                );
            }
            drop(stream);
            continue;
        };
        tokio::spawn(connection(
            stream,
            peer,
            app.clone(),
            limits,
            slot,
            closed.clone(),
        ));
    }
    let _ = closing.send(true);
    let deadline = Instant::now() + limits.shutdown_grace;
    while held.total.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: axum::Router,
    limits: EdgeLimits,
    _slot: Slot,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let last = Arc::new(AtomicU64::new(0));
    let watched = Watched {
        stream,
        last: last.clone(),
        epoch: Instant::now(),
    };
    let epoch = watched.epoch;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let service = {
        let in_flight = in_flight.clone();
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let app = app.clone();
            let busy = Busy::enter(&in_flight);
            async move {
                let answer = app.oneshot(req.map(axum::body::Body::new));
                let r = match tokio::time::timeout(limits.request_timeout, answer).await {
                    Ok(r) => r,
                    Err(_) => Ok(super::error::ApiError::new(
                        axum::http::StatusCode::REQUEST_TIMEOUT,
                        "timeout",
                        format!(
                            "the request took longer than {:?} (a body sent too slowly?)",
                            limits.request_timeout
                        ),
                    )
                    .into_response()),
                };
                drop(busy);
                r
            }
        })
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 << 10);
    let conn = http.serve_connection(TokioIo::new(watched), service);
    tokio::pin!(conn);
    let every = Duration::from_secs(1)
        .min(limits.idle_timeout)
        .max(Duration::from_millis(10));
    let mut check = tokio::time::interval(every);
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("serve: connection from {peer}: {e}");
                }
                return;
            }
            _ = check.tick() => {
                let quiet = epoch.elapsed().saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
                if in_flight.load(Ordering::Relaxed) == 0 && quiet >= limits.idle_timeout {
                    return;
                }
            }
            changed = closing.changed() => {
                if changed.is_err() || *closing.borrow() {
                    conn.as_mut().graceful_shutdown();
                    // Only the connection's own end is awaited now; the
                    // server's grace bounds it.
                    let _ = conn.as_mut().await;
                    return;
                }
            }
        }
    }
}

/// A request in flight on a connection (it is not idle meanwhile).
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn enter(n: &Arc<AtomicUsize>) -> Busy {
        n.fetch_add(1, Ordering::Relaxed);
        Busy(n.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
