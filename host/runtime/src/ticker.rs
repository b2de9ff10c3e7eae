//! Advances the engine epoch on a dedicated thread, so a guest in a busy loop
//! hits its deadline without any cooperation from tokio or the guest.
//!
//! The ticks matter only while a guest runs, so after a second without a
//! guest call the thread parks until the next call begins: an idle pipeline
//! no longer pays 200 wake-ups a second for them. A call marks itself with
//! [`Ticker::busy`]; only the call that finds the thread parked takes its
//! lock, so calls in a busy pipeline cost two atomic operations.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::Engine;

/// Idle ticks before the thread parks.
const PARK_AFTER_TICKS: u32 = 200;

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Guest calls in progress.
    calls: AtomicUsize,
    parked: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

pub(crate) struct Ticker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// A guest call in progress: the ticker runs until it is dropped.
pub(crate) struct Busy(Arc<Shared>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Ticker {
    pub(crate) fn start(engine: Engine, tick: Duration) -> Self {
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("weir-epoch".into())
            .spawn(move || {
                let mut idle = 0;
                while !s.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    engine.increment_epoch();
                    if s.calls.load(Ordering::SeqCst) > 0 {
                        idle = 0;
                        continue;
                    }
                    idle += 1;
                    if idle < PARK_AFTER_TICKS {
                        continue;
                    }
                    // `parked` is set before `calls` is read again, and a
                    // call counts itself before reading `parked`: one of
                    // the two sees the other, so no call waits for ticks.
                    let mut guard = s.lock.lock().unwrap_or_else(|e| e.into_inner());
                    s.parked.store(true, Ordering::SeqCst);
                    while s.calls.load(Ordering::SeqCst) == 0 && !s.stop.load(Ordering::SeqCst) {
                        guard = s.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                    }
                    s.parked.store(false, Ordering::SeqCst);
                    idle = 0;
                }
            })
            .expect("spawning the epoch ticker thread");
        Ticker {
            shared,
            thread: Some(thread),
        }
    }

    /// Mark a guest call as running until the returned guard drops.
    pub(crate) fn busy(&self) -> Busy {
        let s = &self.shared;
        s.calls.fetch_add(1, Ordering::SeqCst);
        if s.parked.load(Ordering::SeqCst) {
            let _guard = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_one();
        }
        Busy(s.clone())
    }

    #[cfg(test)]
    fn is_parked(&self) -> bool {
        self.shared.parked.load(Ordering::SeqCst)
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _guard = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_one();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn ticks_run_during_calls_and_park_between_them() {
        let engine = Engine::new(wasmtime::Config::new().epoch_interruption(true)).unwrap();
        let ticker = Ticker::start(engine, Duration::from_micros(200));
        // 200 idle ticks of 200 us: parked within a fraction of a second.
        let start = Instant::now();
        while !ticker.is_parked() {
            assert!(start.elapsed() < Duration::from_secs(5), "never parked");
            std::thread::sleep(Duration::from_millis(5));
        }
        // A call wakes it and keeps it ticking as long as the call lasts.
        let busy = ticker.busy();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!ticker.is_parked());
        drop(busy);
        let start = Instant::now();
        while !ticker.is_parked() {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "never parked again"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(ticker); // joins a parked thread
    }
}
