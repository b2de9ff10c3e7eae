//! Running a batch's work on a bounded number of threads: the task count
//! follows the data (state partitions, input partitions, a sink's pieces),
//! the thread count follows the machine, or `WEIR_PARALLELISM` when set.
//! A query owns one pool ([`Workers`]) and lends it to its sources and
//! sinks, so nothing else spawns threads per batch.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// Threads a batch's tasks may use: `WEIR_PARALLELISM` (a positive number)
/// when set, else the machine's available parallelism.
pub fn default_parallelism() -> usize {
    std::env::var("WEIR_PARALLELISM")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

type Job = Box<dyn FnOnce() + Send + 'static>;
type Panic = Box<dyn std::any::Any + Send>;

/// A query's own threads, kept while it is busy, so that a task runs on
/// the same thread batch after batch: item `i` of every [`Workers::map`]
/// runs on thread `i % n`. A state partition's rows are then allocated and
/// freed by one thread; with a thread per batch, each batch freed the rows
/// a previous batch's exited thread had allocated, through the allocator's
/// slower cross-thread path. The threads start with the first work that
/// needs more than one, and an idle query lets them go
/// ([`Workers::retire`]): a parked pipeline holds none.
pub struct Workers {
    /// Tells this pool's threads from others (see [`Workers::map`]).
    id: usize,
    size: usize,
    name: String,
    running: Mutex<Option<Arc<Threads>>>,
}

/// The started threads, and the queues that feed them.
struct Threads {
    senders: Vec<mpsc::Sender<Job>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Threads {
    fn drop(&mut self) {
        self.senders.clear();
        for t in self.handles.drain(..) {
            let _ = t.join();
        }
    }
}

/// Pools are numbered from 1; 0 means "not a pool's thread".
static NEXT_POOL: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The pool this thread belongs to, if any.
    static POOL: Cell<usize> = const { Cell::new(0) };
}

impl Workers {
    /// Up to `n` threads (at least one), named `name`, started on use.
    pub fn new(n: usize, name: &str) -> std::io::Result<Self> {
        Ok(Workers {
            id: NEXT_POOL.fetch_add(1, Ordering::Relaxed),
            size: n.max(1),
            name: name.to_string(),
            running: Mutex::new(None),
        })
    }

    /// Threads in the pool when it runs.
    pub fn threads(&self) -> usize {
        self.size
    }

    /// The threads, started now if they are not running. `None` when not
    /// one could be started (the work then runs on the caller's thread).
    fn started(&self) -> Option<Arc<Threads>> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = &*running {
            return Some(t.clone());
        }
        let mut threads = Threads {
            senders: Vec::new(),
            handles: Vec::new(),
        };
        let id = self.id;
        for _ in 0..self.size {
            let (tx, rx) = mpsc::channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name(self.name.clone())
                .spawn(move || {
                    POOL.with(|p| p.set(id));
                    for job in rx {
                        job();
                    }
                });
            match spawned {
                Ok(h) => {
                    threads.handles.push(h);
                    threads.senders.push(tx);
                }
                Err(e) => {
                    tracing::warn!("{}: runs on fewer threads: {e}", self.name);
                    break;
                }
            }
        }
        if threads.senders.is_empty() {
            return None;
        }
        let threads = Arc::new(threads);
        *running = Some(threads.clone());
        Some(threads)
    }

    /// Stop the threads once their work is done; the next work that needs
    /// them starts them again.
    pub fn retire(&self) {
        let threads = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(threads);
    }

    /// Whether the threads are running now.
    pub fn started_now(&self) -> bool {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// `f` over every item, item `i` on thread `i % n`, each thread's items
    /// in order; results in item order. A panic in `f` is re-raised here,
    /// once every item has run. Called from one of this pool's own threads
    /// (a source read as a task that reads its partitions in parallel), the
    /// items run on that thread: waiting there for its own queue would
    /// never end, and the pool's bound holds either way.
    pub fn map<T: Send, R: Send>(&self, items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
        if self.size.min(items.len()) <= 1 || POOL.with(|p| p.get()) == self.id {
            return items.into_iter().map(f).collect();
        }
        let Some(threads) = self.started() else {
            return items.into_iter().map(f).collect();
        };
        let n = threads.senders.len().min(items.len());
        let count = items.len();
        let mut shares: Vec<Vec<(usize, T)>> = (0..n).map(|_| Vec::new()).collect();
        for (i, t) in items.into_iter().enumerate() {
            shares[i % n].push((i, t));
        }
        let results: Vec<Mutex<Option<R>>> = (0..count).map(|_| Mutex::new(None)).collect();
        let (done_tx, done_rx) = mpsc::channel::<Option<Panic>>();
        let (f, slots) = (&f, &results);
        for (share, sender) in shares.into_iter().zip(&threads.senders) {
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

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_item_order_on_any_thread_count() {
        let items: Vec<u32> = (0..50).collect();
        for threads in [1, 2, 7, 64] {
            let workers = super::Workers::new(threads, "test").unwrap();
            let got = workers.map(items.clone(), |x| x * 2);
            assert_eq!(got, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn work_lent_from_inside_the_pool_runs_on_the_lending_thread() {
        let workers = super::Workers::new(2, "test").unwrap();
        let nested = workers.map(vec![0u32, 1, 2, 3], |i| {
            let here = std::thread::current().id();
            let inner = workers.map(vec![i; 4], |_| std::thread::current().id());
            inner.iter().all(|t| *t == here)
        });
        assert_eq!(nested, [true; 4]);
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
    fn threads_start_on_use_and_stop_when_retired() {
        let workers = super::Workers::new(2, "test").unwrap();
        assert!(!workers.started_now(), "no thread before work");
        assert_eq!(workers.map(vec![5u32], |x| x + 1), [6]);
        assert!(!workers.started_now(), "one item runs on the caller");
        let first = workers.map(vec![0u32, 1], |_| std::thread::current().id());
        assert!(workers.started_now());
        assert!(!first.contains(&std::thread::current().id()));
        workers.retire();
        assert!(!workers.started_now());
        let again = workers.map(vec![0u32, 1], |_| std::thread::current().id());
        assert_ne!(first, again, "retired threads were replaced");
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
