//! Running a batch's tasks on a bounded number of threads: the task count
//! follows the data (state partitions, input partitions), the thread count
//! follows the machine, or `WEIR_PARALLELISM` when set.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads a batch's tasks may use: `WEIR_PARALLELISM` (a positive number)
/// when set, else the machine's available parallelism.
pub fn default_parallelism() -> usize {
    std::env::var("WEIR_PARALLELISM")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `f` over every item on at most `threads` threads; results in item order.
/// A panic in `f` is re-raised here, after the other threads finish.
pub fn map<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let workers = threads.min(items.len());
    if workers <= 1 {
        return items.into_iter().map(f).collect();
    }
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = slots.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = slots.get(i) else { break };
                    let item = slot.lock().expect("slot").take().expect("taken once");
                    let r = f(item);
                    *results[i].lock().expect("slot") = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("slot").expect("every item ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_item_order_on_any_thread_count() {
        let items: Vec<u32> = (0..50).collect();
        for threads in [1, 2, 7, 64] {
            let got = super::map(items.clone(), threads, |x| x * 2);
            assert_eq!(got, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
    }
}
