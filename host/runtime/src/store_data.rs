//! Per-store host state: the (empty by default) WASI context, the memory
//! limiter, and what the guest logged and counted.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::{Level, LogHost, MetricsHost, TypesHost};
use super::output_pipe::GuestOutput;

/// Guests may create at most this many distinct metric names, so a guest
/// cannot grow host memory without bound through metric names.
const MAX_METRICS: usize = 1024;
/// Longest metric name or log line kept, in bytes.
const MAX_TEXT: usize = 4096;

/// Counters and gauges reported by a guest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuestMetrics {
    pub counters: BTreeMap<String, u64>,
    pub gauges: BTreeMap<String, f64>,
    /// Metric updates refused: the name limit was reached, or the name is
    /// not a Prometheus metric name.
    pub dropped: u64,
    /// Fuel burnt by calls (metered guests only), measured by the host.
    pub fuel_consumed: u64,
    /// Linear memory the instance holds, measured by the host.
    pub memory_bytes: u64,
}

/// Denies memory growth past the limit and remembers that it did, so the
/// resulting guest abort is reported as "out of memory", not a bare trap.
pub(crate) struct Limiter {
    pub(crate) max_memory: usize,
    pub(crate) exceeded: bool,
    /// The tenant whose guest memory quota this instance's memory counts
    /// against, and what it charged so far (released on drop).
    pub(crate) tenant: Option<Arc<super::tenant::Tenant>>,
    pub(crate) charged: usize,
    /// Of `charged`, the keyed state this instance wrote up to (state lives
    /// in host memory, and counts against the tenant's quota too).
    pub(crate) state_charged: usize,
    pub(crate) tenant_exceeded: bool,
    /// Linear memory granted so far (what progress and `/metrics` show).
    pub(crate) granted: usize,
}

impl Drop for Limiter {
    fn drop(&mut self) {
        if let Some(t) = &self.tenant {
            t.release(self.charged);
        }
    }
}

impl Limiter {
    /// Charge the tenant for keyed state of `total` bytes: what grew since
    /// the last charge (its high-water mark; released with the instance).
    /// False, with nothing charged, past the tenant's quota.
    pub(crate) fn charge_state(&mut self, total: usize) -> bool {
        let Some(t) = &self.tenant else { return true };
        let more = total.saturating_sub(self.state_charged);
        if more == 0 {
            return true;
        }
        if !t.charge(more) {
            self.tenant_exceeded = true;
            return false;
        }
        self.charged += more;
        self.state_charged = total;
        true
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.exceeded = true;
            return Ok(false);
        }
        if let Some(t) = &self.tenant {
            let more = desired.saturating_sub(current);
            if !t.charge(more) {
                self.tenant_exceeded = true;
                return Ok(false);
            }
            self.charged += more;
        }
        self.granted += desired.saturating_sub(current);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

pub(crate) struct StoreData {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) label: Arc<str>,
    pub(crate) metrics: GuestMetrics,
    pub(crate) stderr: GuestOutput,
    /// The partition's keyed state and clocks, moved in for a stateful call.
    pub(crate) ctx: weir_engine::state::StateContext,
    /// Epoch ticks left before the current call's CPU deadline.
    pub(crate) ticks_left: u64,
    /// Epoch ticks the current call was given (so `ticks_armed -
    /// ticks_left` is how long it has run).
    pub(crate) ticks_armed: u64,
    /// Fuel given to the current call (metered guests), to tell what it burnt.
    pub(crate) fuel_armed: u64,
    /// Most bytes of keyed state; a put past it is refused and fails the call.
    pub(crate) max_state: usize,
    pub(crate) state_exceeded: bool,
    /// The guest's `log` calls, on the same budget as its stdout/stderr.
    pub(crate) log_budget: weir_engine::LogBudget,
    /// The state keys of the current stateful call's records
    /// (`context.state-keys`).
    pub(crate) call_keys: Option<weir_engine::StateKeys>,
    /// Raised to stop the guest mid-call (its pipeline is stopping).
    pub(crate) abort: Option<super::Abort>,
    /// The current call was interrupted by `abort`.
    pub(crate) aborted: bool,
}

impl StoreData {
    pub(crate) fn new(
        label: Arc<str>,
        limits: &super::Limits,
        sandbox: &super::sandbox::Sandbox,
        tenant: Option<Arc<super::tenant::Tenant>>,
    ) -> Result<Self, String> {
        let max_memory = limits.max_memory;
        let stdout = GuestOutput::new("stdout", label.clone());
        let stderr = GuestOutput::new("stderr", label.clone());
        // No network and no inherited stdio; files, environment and the
        // wall clock only as the pipeline grants them.
        let mut b = WasiCtx::builder();
        b.stdout(stdout)
            .stderr(stderr.clone())
            .allow_ip_name_lookup(false)
            .allow_tcp(false)
            .allow_udp(false);
        sandbox.apply(&mut b)?;
        let wasi = b.build();
        Ok(StoreData {
            wasi,
            table: ResourceTable::new(),
            limiter: Limiter {
                max_memory,
                exceeded: false,
                tenant,
                charged: 0,
                state_charged: 0,
                tenant_exceeded: false,
                granted: 0,
            },
            label,
            metrics: GuestMetrics::default(),
            stderr,
            ctx: Default::default(),
            ticks_left: 0,
            ticks_armed: 0,
            fuel_armed: 0,
            max_state: limits.max_state,
            state_exceeded: false,
            log_budget: weir_engine::LogBudget::new(super::output_pipe::LINES_PER_SECOND),
            call_keys: None,
            abort: None,
            aborted: false,
        })
    }
}

impl WasiView for StoreData {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn clip(s: &str) -> &str {
    if s.len() <= MAX_TEXT {
        return s;
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl LogHost for StoreData {
    fn log(&mut self, level: Level, message: String) {
        let (label, msg) = (&*self.label, clip(&message));
        let a = self.log_budget.admit();
        if a.suppressed_before > 0 {
            tracing::warn!(target: crate::GUEST_LOG_TARGET, guest = label,
                "{} guest log lines suppressed by the rate limit", a.suppressed_before);
        }
        if !a.admit {
            return;
        }
        match level {
            Level::Trace => {
                tracing::trace!(target: crate::GUEST_LOG_TARGET, guest = label, "{msg}")
            }
            Level::Debug => {
                tracing::debug!(target: crate::GUEST_LOG_TARGET, guest = label, "{msg}")
            }
            Level::Info => tracing::info!(target: crate::GUEST_LOG_TARGET, guest = label, "{msg}"),
            Level::Warn => tracing::warn!(target: crate::GUEST_LOG_TARGET, guest = label, "{msg}"),
            Level::Error => {
                tracing::error!(target: crate::GUEST_LOG_TARGET, guest = label, "{msg}")
            }
        }
    }
}

impl MetricsHost for StoreData {
    fn counter_add(&mut self, name: String, delta: u64) {
        if !weir_engine::metric_name(&name) {
            self.refuse_metric(&name);
            return;
        }
        let m = &mut self.metrics;
        if let Some(c) = m.counters.get_mut(&name) {
            *c = c.saturating_add(delta);
        } else if m.counters.len() + m.gauges.len() < MAX_METRICS {
            m.counters.insert(clip(&name).to_owned(), delta);
        } else {
            m.dropped += 1;
        }
    }

    fn gauge_set(&mut self, name: String, value: f64) {
        if !weir_engine::metric_name(&name) {
            self.refuse_metric(&name);
            return;
        }
        let m = &mut self.metrics;
        if let Some(g) = m.gauges.get_mut(&name) {
            *g = value;
        } else if m.counters.len() + m.gauges.len() < MAX_METRICS {
            m.gauges.insert(clip(&name).to_owned(), value);
        } else {
            m.dropped += 1;
        }
    }
}

impl StoreData {
    /// Count a refused metric update, and say why (on the log's budget).
    fn refuse_metric(&mut self, name: &str) {
        self.metrics.dropped += 1;
        if self.log_budget.admit().admit {
            tracing::warn!(target: crate::GUEST_LOG_TARGET, guest = &*self.label,
                "metric name {:?} refused: use letters, digits, `_` and `:` (not starting with a digit), at most {} bytes",
                clip(name), weir_engine::MAX_METRIC_NAME);
        }
    }
}

impl TypesHost for StoreData {}
