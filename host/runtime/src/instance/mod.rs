//! One partition task's instance of a transform: its own Store, reused for
//! every batch, rebuilt from the shared instance-pre after a trap.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::Func;

use super::bindings::{BatchError, EXPORT_INTERFACE, OutputBatch, Record, RecordGuest, TimerGuest};
use super::convert::{BatchRef, from_call};
use super::store_data::{GuestMetrics, StoreData};
use super::{Limits, TransformComponent};
use weir_engine::RecordBatch;
use weir_engine::TransformOutput;
use weir_engine::state::{FiredTimers, StateContext};
use weir_engine::{Transform, TransformError};

/// Which guest export a [`WasmTransform`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallMode {
    /// One `process-batch` call per batch (the fast path).
    Batch,
    /// One `process-record` call per record (lowest latency per record).
    PerRecord,
}

struct Live {
    store: Store<StoreData>,
    /// The `timer-handler` export, for stateful components.
    timers: Option<TimerGuest>,
    /// The `record-transform` export, when the component has it.
    records: Option<RecordGuest>,
    /// `process-batch`, called with [`BatchRef`] so batches are lowered
    /// straight from the engine's buffers.
    process_batch: Func,
}

/// A transform component bound to one partition task.
pub struct WasmTransform {
    component: TransformComponent,
    config: Vec<(String, String)>,
    limits: Limits,
    label: Arc<str>,
    mode: CallMode,
    live: Option<Live>,
    instances_created: u64,
    instances_recycled: u64,
    scratch: Record,
    /// Metrics of instances already discarded, so counts survive a trap.
    retired_metrics: GuestMetrics,
}

/// A guest call in progress, until dropped.
struct Running {
    _ticking: super::ticker::Busy,
    _tenant: Option<super::tenant::Running>,
}

impl WasmTransform {
    /// Instantiate and `init` the component; a refused config or a trap in
    /// `init` is returned here, before any record is processed.
    pub fn new(
        component: &TransformComponent,
        config: Vec<(String, String)>,
        limits: Limits,
        label: &str,
        mode: CallMode,
    ) -> Result<Self, TransformError> {
        let mut t = WasmTransform {
            component: component.clone(),
            config,
            limits,
            label: label.into(),
            mode,
            live: None,
            instances_created: 0,
            instances_recycled: 0,
            scratch: records::empty_record(),
            retired_metrics: GuestMetrics::default(),
        };
        t.ensure_live()?;
        Ok(t)
    }

    /// How many instances were created so far (1 + one per recovered trap
    /// or recycled instance).
    pub fn instances_created(&self) -> u64 {
        self.instances_created
    }

    /// How many instances were replaced for holding most of their memory
    /// limit (see `Self::recycle_if_grown`).
    pub fn instances_recycled(&self) -> u64 {
        self.instances_recycled
    }

    /// Replace the instance between calls once its linear memory passed
    /// three quarters of the limit. Linear memory never shrinks, so a guest
    /// runtime that does not free (componentize-py 0.25 keeps every
    /// returned batch's buffers) would reach the limit and trap mid-batch;
    /// a fresh instance costs only its start. Guest memory is not state
    /// (keyed state is the host's), so nothing is lost.
    fn recycle_if_grown(&mut self) {
        let Some(live) = &self.live else {
            return;
        };
        let used = live.store.data().limiter.granted;
        let limit = self.limits.max_memory;
        if used <= limit / 4 * 3 {
            return;
        }
        self.retire();
        self.instances_recycled += 1;
        // Rare (once per many batches for a leaking runtime), so unthrottled.
        tracing::info!(
            target: crate::GUEST_LOG_TARGET,
            guest = %self.label,
            "replaced the guest instance: its memory reached {used} of {limit} bytes (it does not free memory; {} replacements so far)",
            self.instances_recycled
        );
    }

    /// Counters and gauges the guest reported, across instance restarts.
    pub fn metrics(&self) -> GuestMetrics {
        let mut m = self.retired_metrics.clone();
        if let Some(live) = &self.live {
            let cur = &live.store.data().metrics;
            for (k, v) in &cur.counters {
                *m.counters.entry(k.clone()).or_default() += v;
            }
            m.gauges
                .extend(cur.gauges.iter().map(|(k, v)| (k.clone(), *v)));
            m.dropped += cur.dropped;
            // The current call's fuel is counted when the next is armed;
            // count what it burnt so far here.
            let data = live.store.data();
            let left = live.store.get_fuel().unwrap_or(data.fuel_armed);
            m.fuel_consumed = m
                .fuel_consumed
                .saturating_add(cur.fuel_consumed)
                .saturating_add(data.fuel_armed.saturating_sub(left));
            m.memory_bytes = data.limiter.granted as u64;
        }
        m
    }

    /// Count this thread as running a guest: for the epoch ticker (deadlines)
    /// and for its tenant (CPU shares).
    fn running(&self) -> Running {
        Running {
            _ticking: self.component.inner.ticker.busy(),
            _tenant: self.component.tenant.as_ref().map(|t| t.enter()),
        }
    }

    fn deadline_ticks(&self) -> u64 {
        let tick = self.component.inner.epoch_tick.as_nanos().max(1);
        (self.limits.call_deadline.as_nanos() / tick) as u64 + 1
    }

    fn ensure_live(&mut self) -> Result<&mut Live, TransformError> {
        if self
            .component
            .abort
            .as_ref()
            .is_some_and(super::Abort::is_raised)
        {
            return Err(TransformError::Stopped);
        }
        if self.live.is_none() {
            let live = self.instantiate()?;
            self.live = Some(live);
        }
        Ok(self.live.as_mut().expect("just set"))
    }

    fn instantiate(&mut self) -> Result<Live, TransformError> {
        let _ticking = self.component.inner.ticker.busy();
        let inner = &self.component.inner;
        let state = StoreData::new(
            self.label.clone(),
            &self.limits,
            self.component.sandbox(),
            self.component.tenant.clone(),
        )
        .map_err(TransformError::Fatal)?;
        let mut store = Store::new(&inner.engine, state);
        store.data_mut().abort = self.component.abort.clone();
        store.limiter(|s| &mut s.limiter);
        // Every tick interrupts a running guest: the call's CPU deadline is
        // counted here, and a tenant over its CPU share yields its core.
        store.epoch_deadline_callback(|mut ctx| {
            let data = ctx.data_mut();
            let aborted = data.abort.as_ref().is_some_and(super::Abort::is_raised);
            if aborted || data.ticks_left <= 1 {
                // Cut off: its tenant carries the time it ran.
                data.aborted |= aborted;
                if let Some(t) = &data.limiter.tenant {
                    t.cut_off(data.ticks_armed.saturating_sub(data.ticks_left));
                }
                return Ok(wasmtime::UpdateDeadline::Interrupt);
            }
            data.ticks_left -= 1;
            if let Some(t) = &data.limiter.tenant {
                t.maybe_yield(data.ticks_armed.saturating_sub(data.ticks_left));
            }
            Ok(wasmtime::UpdateDeadline::Continue(1))
        });
        arm(&mut store, self.deadline_ticks(), self.limits.fuel);
        self.instances_created += 1;
        let instantiated = inner.pre.instantiate(&mut store).and_then(|instance| {
            let bindings = inner.indices.load(&mut store, &instance)?;
            let timers = inner
                .timer_indices
                .as_ref()
                .map(|t| t.load(&mut store, &instance))
                .transpose()?;
            let records = inner
                .record_indices
                .as_ref()
                .map(|t| t.load(&mut store, &instance))
                .transpose()?;
            let iface = instance
                .get_export_index(&mut store, None, EXPORT_INTERFACE)
                .ok_or_else(|| wasmtime::format_err!("no {EXPORT_INTERFACE} export"))?;
            let func = instance
                .get_export_index(&mut store, Some(&iface), "process-batch")
                .and_then(|i| instance.get_func(&mut store, i))
                .ok_or_else(|| wasmtime::format_err!("no process-batch export"))?;
            Ok((bindings, timers, records, func))
        });
        let (bindings, timers, records, process_batch) = match instantiated {
            Ok(b) => b,
            Err(e) => return Err(classify(&e, &store, &self.limits)),
        };
        arm(&mut store, self.deadline_ticks(), self.limits.fuel);
        let _running = self.running();
        match bindings.call_init(&mut store, &self.config) {
            Ok(Ok(())) => Ok(Live {
                store,
                timers,
                records,
                process_batch,
            }),
            Ok(Err(msg)) => Err(TransformError::Config(msg)),
            Err(e) => Err(classify(&e, &store, &self.limits)),
        }
    }

    /// Drop a poisoned instance, keeping its metrics.
    fn retire(&mut self) {
        if let Some(live) = self.live.take() {
            let m = &live.store.data().metrics;
            for (k, v) in &m.counters {
                *self.retired_metrics.counters.entry(k.clone()).or_default() += v;
            }
            self.retired_metrics
                .gauges
                .extend(m.gauges.iter().map(|(k, v)| (k.clone(), *v)));
            self.retired_metrics.dropped += m.dropped;
            self.retired_metrics.fuel_consumed += m.fuel_consumed;
        }
    }

    fn call_batch(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError> {
        let ticks = self.deadline_ticks();
        let limits = self.limits;
        let _running = self.running();
        let live = self.ensure_live()?;
        arm(&mut live.store, ticks, limits.fuel);
        let call = live
            .process_batch
            .typed::<(BatchRef<'_>,), (Result<OutputBatch, BatchError>,)>(&live.store)
            .and_then(|f| f.call(&mut live.store, (BatchRef::from(input),)))
            .map(|(r,)| r);
        match call {
            Ok(r) => from_call(r, ""),
            Err(e) => Err(classify(&e, &live.store, &limits)),
        }
    }
}

impl WasmTransform {
    /// One batch call, with the task's state moved into the store for its
    /// duration when `ctx` is given.
    fn run(
        &mut self,
        input: &RecordBatch,
        ctx: Option<&mut StateContext>,
    ) -> Result<TransformOutput, TransformError> {
        let result = match ctx {
            None => self.call(input),
            Some(ctx) => {
                let live = self.ensure_live()?;
                let data = live.store.data_mut();
                data.state_exceeded = false;
                data.call_keys = input.state_keys().cloned();
                std::mem::swap(&mut data.ctx, ctx);
                let r = self.call(input);
                let live = self.live.as_mut().expect("retired only below");
                let data = live.store.data_mut();
                data.call_keys = None;
                std::mem::swap(&mut data.ctx, ctx);
                match r {
                    Ok(_) if data.state_exceeded => Err(TransformError::StateLimit {
                        limit: data.max_state,
                    }),
                    r => r,
                }
            }
        };
        self.finish(result, input.len())
    }

    fn call(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError> {
        match self.mode {
            CallMode::Batch => self.call_batch(input),
            CallMode::PerRecord => self.call_records(input),
        }
    }

    /// Validate a call's output against its input count; drop the instance
    /// after a failure that poisons it.
    fn finish(
        &mut self,
        result: Result<TransformOutput, TransformError>,
        inputs: usize,
    ) -> Result<TransformOutput, TransformError> {
        match result {
            Ok(out) => {
                out.validate(inputs)
                    .map_err(|e| TransformError::Malformed(e.to_string()))?;
                self.recycle_if_grown();
                Ok(out)
            }
            Err(e) => {
                // A trap, or a call interrupted by a stop: the instance is
                // poisoned either way.
                if e.poisons_instance() || matches!(e, TransformError::Stopped) {
                    self.retire();
                }
                Err(e)
            }
        }
    }
}

impl Transform for WasmTransform {
    fn reported_metrics(&self) -> weir_engine::TransformMetrics {
        let m = self.metrics();
        weir_engine::TransformMetrics {
            counters: m.counters,
            gauges: m.gauges,
            memory_bytes: m.memory_bytes,
            fuel_consumed: m.fuel_consumed,
            instances_recycled: self.instances_recycled,
            dropped: m.dropped,
        }
    }

    fn process_batch(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError> {
        self.run(input, None)
    }

    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        self.run(input, Some(ctx))
    }

    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let r = self.call_timers(fired, ctx);
        self.finish(r, fired.len())
    }
}

mod records;
mod timers;

mod failure;
use failure::{arm, classify};
