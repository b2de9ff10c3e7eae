//! Tenants: whose guests these are, how much guest memory they may hold
//! together, and their share of the CPU.
//!
//! **Memory quota.** Every instance of a tenant's guests charges its linear
//! memory to the tenant's budget as it grows and releases it when the
//! instance is dropped; growth past the budget fails like any memory limit
//! (the call fails as out-of-memory and the error policy applies).
//!
//! **CPU shares, by epoch-based yielding.** Guests run on OS threads. The
//! epoch ticker interrupts a running guest every tick; at each interruption
//! the [`Scheduler`] checks whether the machine is oversubscribed (more
//! threads inside guest calls than cores) and whether this tenant runs more
//! of them than its weighted share of the cores. If both, the thread sleeps
//! for a tick and so yields its core: a tenant with many busy guests gets
//! its share, not a share per thread, and cannot starve a tenant with few.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Tenants' CPU shares, shared by every tenant of one process.
#[derive(Debug)]
pub struct Scheduler {
    cores: usize,
    tick: Duration,
    /// Weight and running-thread count of each tenant with guests.
    tenants: Mutex<HashMap<String, Arc<Share>>>,
    /// Threads inside guest calls, all tenants.
    running: AtomicUsize,
    /// Ticks a guest thread slept to yield its core.
    yields: AtomicU64,
}

#[derive(Debug)]
struct Share {
    /// Changed in place when the tenant's weight changes, so its running
    /// guests are scheduled by the new one at once.
    weight: AtomicU32,
    /// Threads inside guest calls and not yielding right now.
    running: AtomicUsize,
    /// Threads inside guest calls, yielding or not.
    inside: AtomicUsize,
}

impl Scheduler {
    /// A scheduler for `cores` cores (the machine's when `None`); a thread
    /// that yields sleeps for `tick` (the runtime's epoch tick).
    pub fn new(cores: Option<usize>, tick: Duration) -> Arc<Scheduler> {
        let cores = cores
            .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
            .unwrap_or(1);
        Arc::new(Scheduler {
            cores,
            tick,
            tenants: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            yields: AtomicU64::new(0),
        })
    }

    fn share(&self, name: &str, weight: u32) -> Arc<Share> {
        let mut t = self.tenants.lock().expect("scheduler lock");
        let share = t
            .entry(name.to_string())
            .or_insert_with(|| {
                Arc::new(Share {
                    weight: AtomicU32::new(1),
                    running: AtomicUsize::new(0),
                    inside: AtomicUsize::new(0),
                })
            })
            .clone();
        share.weight.store(weight.max(1), Ordering::Relaxed);
        share
    }

    /// Ticks guest threads slept so far to yield their core.
    pub fn yields(&self) -> u64 {
        self.yields.load(Ordering::Relaxed)
    }

    /// Cores `share` may use now: its weighted part of the cores among the
    /// tenants that have guests running, at least one.
    fn allowance(&self, share: &Share) -> usize {
        let t = self.tenants.lock().expect("scheduler lock");
        // The caller's tenant is running (the caller is one of its threads).
        let active: u32 = t
            .values()
            .filter(|s| s.running.load(Ordering::Relaxed) > 0)
            .map(|s| s.weight.load(Ordering::Relaxed))
            .fold(0u32, u32::saturating_add);
        let mine = share.weight.load(Ordering::Relaxed);
        let active = active.max(mine);
        let part = self.cores as f64 * f64::from(mine) / f64::from(active.max(1));
        (part.ceil() as usize).max(1)
    }
}

/// One tenant, as its guests' instances see it.
#[derive(Debug)]
pub struct Tenant {
    name: String,
    max_memory: usize,
    memory: AtomicUsize,
    share: Arc<Share>,
    scheduler: Arc<Scheduler>,
}

impl Tenant {
    /// A tenant whose guests may hold `max_memory` bytes of linear memory
    /// together, scheduled with `weight` by `scheduler`.
    pub fn new(
        name: &str,
        max_memory: usize,
        weight: u32,
        scheduler: &Arc<Scheduler>,
    ) -> Arc<Self> {
        Arc::new(Tenant {
            name: name.to_string(),
            max_memory,
            memory: AtomicUsize::new(0),
            share: scheduler.share(name, weight),
            scheduler: scheduler.clone(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of linear memory its live instances hold.
    pub fn memory_used(&self) -> usize {
        self.memory.load(Ordering::Relaxed)
    }

    pub fn max_memory(&self) -> usize {
        self.max_memory
    }

    /// Charge `bytes` more memory; false (and nothing charged) past the budget.
    pub(crate) fn charge(&self, bytes: usize) -> bool {
        self.memory
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used + bytes <= self.max_memory).then_some(used + bytes)
            })
            .is_ok()
    }

    pub(crate) fn release(&self, bytes: usize) {
        self.memory.fetch_sub(bytes, Ordering::SeqCst);
    }

    /// Mark the calling thread as inside a guest call until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> Running {
        self.share.inside.fetch_add(1, Ordering::SeqCst);
        self.share.running.fetch_add(1, Ordering::SeqCst);
        self.scheduler.running.fetch_add(1, Ordering::SeqCst);
        Running(self.clone())
    }

    /// Called at each epoch interruption of a running guest: sleep a tick
    /// if the machine is oversubscribed and this tenant is over its share.
    pub(crate) fn maybe_yield(&self) {
        let s = &self.scheduler;
        if s.running.load(Ordering::SeqCst) <= s.cores {
            return;
        }
        let mine = self.share.running.load(Ordering::SeqCst);
        let allowed = s.allowance(&self.share);
        if mine > allowed {
            // With n threads in calls and an allowance of k cores, each
            // thread over it sleeps n - k ticks per tick it runs, so about
            // k of them run at a time.
            let inside = self.share.inside.load(Ordering::SeqCst);
            let ticks = inside.saturating_sub(allowed).max(1) as u32;
            self.share.running.fetch_sub(1, Ordering::SeqCst);
            s.running.fetch_sub(1, Ordering::SeqCst);
            s.yields.fetch_add(ticks as u64, Ordering::Relaxed);
            std::thread::sleep(s.tick * ticks);
            self.share.running.fetch_add(1, Ordering::SeqCst);
            s.running.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A thread inside a tenant's guest call.
pub(crate) struct Running(Arc<Tenant>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.share.inside.fetch_sub(1, Ordering::SeqCst);
        self.0.share.running.fetch_sub(1, Ordering::SeqCst);
        self.0.scheduler.running.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_charged_against_the_budget() {
        let s = Scheduler::new(Some(2), Duration::from_millis(1));
        let t = Tenant::new("a", 100, 1, &s);
        assert!(t.charge(60));
        assert!(!t.charge(50), "past the budget");
        assert_eq!(t.memory_used(), 60);
        t.release(60);
        assert!(t.charge(100));
    }

    #[test]
    fn a_tenant_over_its_share_yields_only_when_the_machine_is_full() {
        let s = Scheduler::new(Some(2), Duration::from_millis(1));
        let a = Tenant::new("a", 1 << 30, 1, &s);
        let b = Tenant::new("b", 1 << 30, 1, &s);
        let _b1 = b.enter();
        let _b2 = b.enter();
        b.maybe_yield();
        assert_eq!(s.yields(), 0, "two threads on two cores: no contention");
        let _a1 = a.enter();
        b.maybe_yield();
        assert_eq!(s.yields(), 1, "b holds both cores while a waits");
        a.maybe_yield();
        assert_eq!(s.yields(), 1, "a is within its share");
    }
}
