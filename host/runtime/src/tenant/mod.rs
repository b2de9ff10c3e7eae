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
//!
//! **Long calls give way** (as a multi-level feedback queue drops a job
//! that keeps the CPU): a guest call that has run for over 250 ms, while
//! another tenant has guests at work, sleeps a tick per tick it runs (half
//! a core), past 1 s three (a quarter), past 5 s nine (a tenth), past 15 s
//! nineteen (a twentieth). A guest
//! that loops in every call cannot hold a core a neighbour's pipeline needs
//! for its host work (reading, writing, committing), which the shares
//! above do not see.
//!
//! **Cut-off calls are remembered.** A call that did not return (its
//! deadline passed or its pipeline was stopped) leaves its running time
//! to the tenant, and the tenant's next calls count from there; so a guest
//! that loops, is stopped and started again, does not begin each time with
//! a fresh quarter second at full speed (the queue's rule that time is
//! accounted across a job's slices, so yielding early does not reset it).
//! The tenant is forgiven after 10 s with no long call (the queue's
//! periodic boost); calls that return are never carried over.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// What `Share::last_call` counts from.
    epoch: Instant,
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
    /// When a guest call of the tenant last started (ms since the
    /// scheduler's epoch): whether it has work now.
    last_call: AtomicU64,
    /// Running time (ms) of the tenant's recent calls that were cut off:
    /// where its next calls start counting.
    carried_ms: AtomicU64,
    /// When a call of the tenant was last seen running long (ms since the
    /// scheduler's epoch; 0: never), for forgiving `carried_ms`.
    last_long: AtomicU64,
}

/// A call this long (its own running time plus what its tenant carries)
/// gives way to other tenants' work.
const LONG_CALL: Duration = Duration::from_millis(250);

/// A tenant with no long call for this long is forgiven what it carried.
const FORGIVE_AFTER: Duration = Duration::from_secs(10);

impl Share {
    /// What the tenant carries now (ms): nothing once it is forgiven.
    fn carried(&self, now_ms: u64) -> u64 {
        let last = self.last_long.load(Ordering::Relaxed);
        if last == 0 || now_ms.saturating_sub(last) > FORGIVE_AFTER.as_millis() as u64 {
            self.carried_ms.store(0, Ordering::Relaxed);
            return 0;
        }
        self.carried_ms.load(Ordering::Relaxed)
    }
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
            epoch: Instant::now(),
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
                    last_call: AtomicU64::new(0),
                    carried_ms: AtomicU64::new(0),
                    last_long: AtomicU64::new(0),
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

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Whether a tenant other than `share`'s has guests at work: in a call
    /// now, or one started within the last second.
    fn others_active(&self, share: &Arc<Share>) -> bool {
        let now = self.now_ms();
        let t = self.tenants.lock().expect("scheduler lock");
        t.values().any(|s| {
            !Arc::ptr_eq(s, share)
                && (s.inside.load(Ordering::Relaxed) > 0 || {
                    // 0: never called.
                    let last = s.last_call.load(Ordering::Relaxed);
                    last > 0 && now.saturating_sub(last) < 1000
                })
        })
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

    /// Where a host `[window]` of this tenant charges its state: the same
    /// quota its guests' memory and keyed state count against.
    pub fn state_budget(self: &Arc<Self>) -> Arc<dyn weir_engine::window::StateBudget> {
        Arc::new(window_charge::StateBudget(self.clone()))
    }

    /// Mark the calling thread as inside a guest call until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> Running {
        self.share
            .last_call
            .store(self.scheduler.now_ms().max(1), Ordering::Relaxed);
        self.share.inside.fetch_add(1, Ordering::SeqCst);
        self.share.running.fetch_add(1, Ordering::SeqCst);
        self.scheduler.running.fetch_add(1, Ordering::SeqCst);
        Running(self.clone())
    }

    /// Called at each epoch interruption of a running guest whose call has
    /// run `call_ticks` ticks: sleep if the machine is oversubscribed and
    /// this tenant is over its share, or if the call has run long while
    /// another tenant has work.
    pub(crate) fn maybe_yield(&self, call_ticks: u64) {
        let s = &self.scheduler;
        if s.running.load(Ordering::SeqCst) > s.cores {
            let mine = self.share.running.load(Ordering::SeqCst);
            let allowed = s.allowance(&self.share);
            if mine > allowed {
                // With n threads in calls and an allowance of k cores, each
                // thread over it sleeps n - k ticks per tick it runs, so
                // about k of them run at a time.
                let inside = self.share.inside.load(Ordering::SeqCst);
                self.pause(inside.saturating_sub(allowed).max(1) as u32);
                return;
            }
        }
        let now = s.now_ms();
        let ran = s
            .tick
            .saturating_mul(call_ticks.min(u64::from(u32::MAX)) as u32)
            + Duration::from_millis(self.share.carried(now));
        if ran < LONG_CALL {
            return;
        }
        self.share.last_long.store(now.max(1), Ordering::Relaxed);
        if s.others_active(&self.share) {
            self.pause(long_call_pause(ran));
        }
    }

    /// Called when a guest call is cut off (deadline or stop) after
    /// `call_ticks` ticks: the tenant carries its running time into its
    /// next calls.
    pub(crate) fn cut_off(&self, call_ticks: u64) {
        let ran = self.scheduler.tick.as_millis() as u64 * call_ticks;
        let now = self.scheduler.now_ms();
        // Forget an old carry before adding to it.
        self.share.carried(now);
        self.share.carried_ms.fetch_add(ran, Ordering::Relaxed);
        if ran > 0 {
            self.share.last_long.store(now.max(1), Ordering::Relaxed);
        }
    }

    /// Sleep `ticks` ticks, not counted as running meanwhile.
    fn pause(&self, ticks: u32) {
        let s = &self.scheduler;
        self.share.running.fetch_sub(1, Ordering::SeqCst);
        s.running.fetch_sub(1, Ordering::SeqCst);
        s.yields.fetch_add(u64::from(ticks), Ordering::Relaxed);
        std::thread::sleep(s.tick * ticks);
        self.share.running.fetch_add(1, Ordering::SeqCst);
        s.running.fetch_add(1, Ordering::SeqCst);
    }
}

/// Ticks a call that has run for `ran` (with what its tenant carries)
/// sleeps per tick it runs, when another tenant has work: none for 250 ms,
/// then 1, 3, 9 and 19 (half, a quarter, a tenth and a twentieth of a
/// core) past 250 ms, 1 s, 5 s and 15 s.
fn long_call_pause(ran: Duration) -> u32 {
    match ran.as_millis() {
        0..250 => 0,
        250..1000 => 1,
        1000..5000 => 3,
        5000..15000 => 9,
        _ => 19,
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

mod window_charge;

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
        b.maybe_yield(1);
        assert_eq!(s.yields(), 0, "two threads on two cores: no contention");
        let _a1 = a.enter();
        b.maybe_yield(1);
        assert_eq!(s.yields(), 1, "b holds both cores while a waits");
        a.maybe_yield(1);
        assert_eq!(s.yields(), 1, "a is within its share");
    }

    #[test]
    fn a_long_call_gives_way_only_while_another_tenant_has_work() {
        let s = Scheduler::new(Some(2), Duration::from_millis(1));
        let a = Tenant::new("a", 1 << 30, 1, &s);
        let b = Tenant::new("b", 1 << 30, 1, &s);
        let _b1 = b.enter();
        // Two seconds into a call (2,000 ticks of 1 ms), nobody else: runs on.
        b.maybe_yield(2000);
        assert_eq!(s.yields(), 0);
        // A has just had a call: b's long call sleeps a tick per tick.
        drop(a.enter());
        b.maybe_yield(10);
        assert_eq!(s.yields(), 0, "a short call does not give way");
        b.maybe_yield(500);
        assert_eq!(s.yields(), 1);
        b.maybe_yield(10_000);
        assert_eq!(s.yields(), 10, "past 5 s: nine ticks per tick");
        assert_eq!(long_call_pause(Duration::from_secs(2)), 3);
        assert_eq!(long_call_pause(Duration::from_secs(30)), 19);
    }

    #[test]
    fn a_cut_off_call_is_carried_into_the_next_until_forgiven() {
        let s = Scheduler::new(Some(2), Duration::from_millis(1));
        let a = Tenant::new("a", 1 << 30, 1, &s);
        let b = Tenant::new("b", 1 << 30, 1, &s);
        drop(a.enter());
        // b's call looped for 2 s and was stopped.
        let call = b.enter();
        b.cut_off(2000);
        drop(call);
        // Its next call gives way from its first tick, at the 1 s level.
        let _call = b.enter();
        b.maybe_yield(1);
        assert_eq!(s.yields(), 3, "2 s carried: three ticks per tick");
        // Forgiven once nothing ran long for 10 s.
        b.share.last_long.store(1, Ordering::Relaxed);
        let later = s.now_ms() + FORGIVE_AFTER.as_millis() as u64 + 2;
        assert_eq!(b.share.carried(later), 0);
        b.maybe_yield(1);
        assert_eq!(s.yields(), 3, "a forgiven tenant's short call runs on");
    }
}
