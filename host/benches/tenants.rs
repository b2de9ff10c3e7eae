//! Fair CPU sharing between tenants (issue 7): tenant A runs one busy guest
//! thread, tenant B four, on this machine's cores. Each guest call does a
//! fixed amount of CPU work (20 M xorshift steps, the `misbehave` guest's
//! `work` record), so the calls a tenant completes per second measure the
//! CPU its guests got. Three phases in one
//! run: A alone; A beside B with no tenants (the kernel shares the cores per
//! thread, so B's four threads take most of them); A beside B as tenants
//! with equal weights (epoch-based yielding gives each tenant half).
//!
//! Run: cargo bench -p weir --bench tenants

use weir_testkit as testkit;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use weir_engine::{RecordBatch, Transform};
use weir_runtime::tenant::{Scheduler, Tenant};
use weir_runtime::{CallMode, Limits, TransformComponent, WasmTransform};

const WINDOW: Duration = Duration::from_secs(6);

/// Run `threads` busy guests of `component` until `stop`; count calls.
fn spawn(
    component: &TransformComponent,
    threads: usize,
    stop: &Arc<AtomicBool>,
    calls: &Arc<AtomicU64>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|i| {
            let (c, stop, calls) = (component.clone(), stop.clone(), calls.clone());
            std::thread::spawn(move || {
                let mut t = WasmTransform::new(
                    &c,
                    vec![],
                    Limits::default(),
                    &format!("t{i}"),
                    CallMode::Batch,
                )
                .unwrap();
                let mut b = RecordBatch::new(0);
                b.push(None, b"work", 0, 0);
                while !stop.load(Ordering::Relaxed) {
                    t.process_batch(&b).unwrap();
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect()
}

/// Calls per second of A (and B, when `b_threads > 0`) over the window.
fn phase(a: &TransformComponent, b: &TransformComponent, b_threads: usize) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let (ca, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut handles = spawn(a, 1, &stop, &ca);
    handles.extend(spawn(b, b_threads, &stop, &cb));
    std::thread::sleep(Duration::from_millis(500));
    let (a0, b0) = (ca.load(Ordering::Relaxed), cb.load(Ordering::Relaxed));
    let started = Instant::now();
    std::thread::sleep(WINDOW);
    let secs = started.elapsed().as_secs_f64();
    let (a1, b1) = (ca.load(Ordering::Relaxed), cb.load(Ordering::Relaxed));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    ((a1 - a0) as f64 / secs, (b1 - b0) as f64 / secs)
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let rt = testkit::runtime();
    let plain = rt.load(&testkit::guest("misbehave"), &[]).unwrap();
    let scheduler = Scheduler::new(None, plain.epoch_tick());
    let a_tenant = plain
        .clone()
        .for_tenant(Tenant::new("a", 4 << 30, 1, &scheduler));
    let b_tenant = plain
        .clone()
        .for_tenant(Tenant::new("b", 4 << 30, 1, &scheduler));
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!(
        "{cores} cores; every call does the same CPU work; A: 1 guest thread, B: 4; calls/s over {WINDOW:?}"
    );
    let (solo, _) = phase(&plain, &plain, 0);
    let (shared, b_shared) = phase(&plain, &plain, 4);
    let (fair, b_fair) = phase(&a_tenant, &b_tenant, 4);
    println!("A alone:                          {solo:6.1} calls/s");
    println!(
        "A beside B, no tenants:           {shared:6.1} calls/s ({:.0}% of alone); B {b_shared:.1} calls/s",
        100.0 * shared / solo
    );
    println!(
        "A beside B, tenants, equal shares: {fair:6.1} calls/s ({:.0}% of alone); B {b_fair:.1} calls/s; {} yields",
        100.0 * fair / solo,
        scheduler.yields()
    );
}
