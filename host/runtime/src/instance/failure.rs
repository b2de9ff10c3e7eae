//! Arming a guest call (deadline, fuel) and classifying how it failed.

use wasmtime::{Store, Trap};

use crate::output_pipe::LastWords;
use crate::store_data::StoreData;
use crate::{Limits, one_line};
use weir_engine::TransformError;

/// Arm a store for one call: its CPU deadline (counted down a tick at a
/// time by the epoch callback) and, when metered, its fuel.
pub(super) fn arm(store: &mut Store<StoreData>, ticks: u64, fuel: Option<u64>) {
    store.data().stderr.begin_call();
    store.data_mut().ticks_left = ticks;
    store.data_mut().ticks_armed = ticks;
    store.set_epoch_deadline(1);
    if let Some(f) = fuel {
        let left = store.get_fuel().unwrap_or(0);
        let data = store.data_mut();
        data.metrics.fuel_consumed = data
            .metrics
            .fuel_consumed
            .saturating_add(data.fuel_armed.saturating_sub(left));
        data.fuel_armed = f;
        // Only fails for an engine without metering, refused at start.
        let _ = store.set_fuel(f);
    }
}

/// Turn a failed guest call into a typed error, with what the guest printed
/// to stderr (e.g. a panic message) when there is any.
pub(super) fn classify(
    e: &wasmtime::Error,
    store: &Store<StoreData>,
    limits: &Limits,
) -> TransformError {
    let state = store.data();
    if state.aborted {
        return TransformError::Stopped;
    }
    if state.limiter.tenant_exceeded
        && let Some(t) = &state.limiter.tenant
    {
        return TransformError::TenantMemory {
            tenant: t.name().to_string(),
            limit: t.max_memory(),
        };
    }
    if state.state_exceeded {
        return TransformError::StateLimit {
            limit: state.max_state,
        };
    }
    if matches!(e.downcast_ref::<Trap>(), Some(Trap::OutOfFuel)) {
        return TransformError::OutOfFuel {
            limit: limits.fuel.unwrap_or_default(),
        };
    }
    if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
        return TransformError::Deadline {
            limit: limits.call_deadline,
        };
    }
    if state.limiter.exceeded {
        return TransformError::OutOfMemory {
            limit: limits.max_memory,
        };
    }
    // A panic's own report (message, the user's file and line) says more
    // than the trap it ended in; otherwise the trap with what was printed.
    let message = match state.stderr.take_failure() {
        LastWords::Report(summary) => summary,
        LastWords::Printed(text) => format!("{} (guest stderr: {text})", trap_message(e)),
        LastWords::Nothing => trap_message(e),
    };
    TransformError::Trap { message }
}

/// A trap's cause in one short line: wasmtime's wasm backtrace (function
/// indices and code offsets) is dropped, since users act on the cause.
fn trap_message(e: &wasmtime::Error) -> String {
    let causes: Vec<String> = e
        .chain()
        .map(|c| c.to_string())
        .filter(|c| !c.starts_with("error while executing at wasm backtrace"))
        .collect();
    if causes.is_empty() {
        return one_line(e);
    }
    causes
        .join(": ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
