//! Running a batch's tasks on a bounded number of threads: the task count
//! follows the data (state partitions, input partitions), the thread count
//! follows the machine, or `WEIR_PARALLELISM` when set.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

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

type Job = Box<dyn FnOnce() + Send + 'static>;
type Panic = Box<dyn std::any::Any + Send>;

/// A query's own threads, kept for its life, so that a task runs on the
/// same thread batch after batch: item `i` of every [`Workers::map`] runs
/// on thread `i % n`. A state partition's rows are then allocated and
/// freed by one thread; with a thread per batch (as [`map`] spawns), each
/// batch freed the rows a previous batch's exited thread had allocated,
/// through the allocator's slower cross-thread path.
pub struct Workers {
    senders: Vec<mpsc::Sender<Job>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    /// `n` threads (at least one), named `name`.
    pub fn new(n: usize, name: &str) -> std::io::Result<Self> {
        let mut senders = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..n.max(1) {
            let (tx, rx) = mpsc::channel::<Job>();
            let thread = std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    for job in rx {
                        job();
                    }
                })?;
            threads.push(thread);
            senders.push(tx);
        }
        Ok(Workers { senders, threads })
    }

    /// `f` over every item, item `i` on thread `i % n`, each thread's items
    /// in order; results in item order. A panic in `f` is re-raised here,
    /// once every item has run.
    pub fn map<T: Send, R: Send>(&self, items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
        let n = self.senders.len().min(items.len());
        if n <= 1 {
            return items.into_iter().map(f).collect();
        }
        let count = items.len();
        let mut shares: Vec<Vec<(usize, T)>> = (0..n).map(|_| Vec::new()).collect();
        for (i, t) in items.into_iter().enumerate() {
            shares[i % n].push((i, t));
        }
        let results: Vec<Mutex<Option<R>>> = (0..count).map(|_| Mutex::new(None)).collect();
        let (done_tx, done_rx) = mpsc::channel::<Option<Panic>>();
        let (f, slots) = (&f, &results);
        for (share, sender) in shares.into_iter().zip(&self.senders) {
            let done = done_tx.clone();
            let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    for (i, t) in share {
                        *slots[i].lock().expect("slot") = Some(f(t));
                    }
                }));
                let _ = done.send(r.err());
            });
            // SAFETY: the job borrows `f` and `results`, which outlive this
            // call, and the call returns only once every job has finished
            // or been dropped: each holds a `done` sender, and the receive
            // loop below ends when the last of them is gone.
            let job: Job = unsafe { std::mem::transmute(job) };
            if let Err(mpsc::SendError(job)) = sender.send(job) {
                job();
            }
        }
        drop(done_tx);
        let mut panic = None;
        while let Ok(p) = done_rx.recv() {
            panic = panic.or(p);
        }
        if let Some(p) = panic {
            resume_unwind(p);
        }
        results
            .into_iter()
            .map(|r| r.into_inner().expect("slot").expect("every item ran"))
            .collect()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.senders.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
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

    #[test]
    fn workers_keep_each_item_index_on_one_thread() {
        let workers = super::Workers::new(3, "test").unwrap();
        let thread = |_: u32| std::thread::current().id();
        let first = workers.map((0..7).collect(), thread);
        for _ in 0..3 {
            assert_eq!(workers.map((0..7).collect(), thread), first);
        }
        assert_eq!(first[0], first[3]);
        assert_ne!(first[0], first[1]);
        let borrowed = [10u32, 20, 30];
        let got = workers.map(vec![0usize, 1, 2, 0], |i| borrowed[i] + 1);
        assert_eq!(got, [11, 21, 31, 11]);
    }

    #[test]
    fn a_panic_on_a_worker_reaches_the_caller_and_the_workers_live_on() {
        let workers = super::Workers::new(2, "test").unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            workers.map(vec![1u32, 2, 3, 4], |x| {
                assert_ne!(x, 2, "item two");
                x
            })
        }));
        assert!(r.is_err());
        assert_eq!(workers.map(vec![1u32, 2, 3, 4], |x| x * 3), [3, 6, 9, 12]);
    }
}
