//! Host imports (logging, metrics). Off wasm they are stubbed so transform
//! logic unit-tests natively: log lines go to stderr and metrics to a
//! thread-local table that tests can read with [`crate::testing::counter`].

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

#[cfg(target_arch = "wasm32")]
pub fn log(level: Level, message: &str) {
    use crate::bindings::weir::transform::log::{Level as L, log};
    let l = match level {
        Level::Trace => L::Trace,
        Level::Debug => L::Debug,
        Level::Info => L::Info,
        Level::Warn => L::Warn,
        Level::Error => L::Error,
    };
    log(l, message);
}

#[cfg(not(target_arch = "wasm32"))]
pub fn log(level: Level, message: &str) {
    eprintln!("[{level:?}] {message}");
}

pub fn info(message: &str) {
    log(Level::Info, message);
}

pub fn warn(message: &str) {
    log(Level::Warn, message);
}

pub fn error(message: &str) {
    log(Level::Error, message);
}

pub fn debug(message: &str) {
    log(Level::Debug, message);
}

#[cfg(target_arch = "wasm32")]
pub fn counter_add(name: &str, delta: u64) {
    crate::bindings::weir::transform::metrics::counter_add(name, delta);
}

#[cfg(target_arch = "wasm32")]
pub fn gauge_set(name: &str, value: f64) {
    crate::bindings::weir::transform::metrics::gauge_set(name, value);
}

#[cfg(not(target_arch = "wasm32"))]
pub fn counter_add(name: &str, delta: u64) {
    crate::testing::METRICS
        .with(|m| *m.borrow_mut().counters.entry(name.into()).or_default() += delta);
}

#[cfg(not(target_arch = "wasm32"))]
pub fn gauge_set(name: &str, value: f64) {
    crate::testing::METRICS.with(|m| {
        m.borrow_mut().gauges.insert(name.into(), value);
    });
}
