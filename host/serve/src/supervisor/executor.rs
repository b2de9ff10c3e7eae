//! A tenant's pipelines take turns on a few threads of the tenant's own:
//! threads start when its pipelines have work and end after a quiet spell,
//! so the service's thread count follows the work, not the pipeline count.
//! A thread serves one tenant only because Landlock's fence is per thread
//! and cannot be lifted: each enters its tenant's fence before running
//! anything, and the threads a pipeline starts (its workers, its Kafka
//! clients) inherit it.
//!
//! Threads are started by one unconfined thread of the service's: a thread
//! started from a fenced one would carry that fence too (a wake-up may
//! come from any thread).

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::fence::Fence;

/// How long a tenant's thread waits for work before it ends.
const QUIET: Duration = Duration::from_secs(5);

/// A pipeline's turn: run until it parks or yields.
pub(super) trait Turn: Send + Sync + 'static {
    /// Run one turn on a thread inside the tenant's fence; `fenced` is
    /// why the fence could not be entered, if it could not.
    fn turn(self: Arc<Self>, fenced: Result<(), &str>);
}

pub(super) struct Executor {
    name: String,
    fence: Fence,
    /// Most threads at once.
    max_threads: usize,
    queue: Mutex<Queue>,
    ready: Condvar,
}

#[derive(Default)]
struct Queue {
    turns: VecDeque<Arc<dyn Turn>>,
    threads: usize,
    /// Threads waiting for work now, and how many of them a submit has
    /// woken already (so the next submit wakes another or starts one).
    waiting: usize,
    woken: usize,
}

impl Executor {
    /// Tenant `tenant`'s executor, its threads fenced by `fence`.
    pub fn new(tenant: &str, fence: Fence) -> Arc<Executor> {
        let max_threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(2);
        Arc::new(Executor {
            name: format!("weir-tenant-{tenant}"),
            fence,
            max_threads,
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
        })
    }

    /// Queue a turn; a thread takes it as soon as one is free.
    pub fn submit(self: &Arc<Self>, turn: Arc<dyn Turn>) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.turns.push_back(turn);
        if q.waiting > q.woken {
            q.woken += 1;
            self.ready.notify_one();
        } else if q.threads < self.max_threads {
            q.threads += 1;
            drop(q);
            spawner().start(self.clone());
        }
    }

    /// Threads running now.
    #[cfg(test)]
    pub fn threads(&self) -> usize {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).threads
    }

    /// A thread's life: enter the fence, then take turns until none comes
    /// for [`QUIET`].
    fn serve(self: Arc<Self>) {
        let fenced = self.fence.enter().map(|_| ()).inspect_err(|e| {
            tracing::error!("{}: cannot fence its threads: {e}", self.name);
        });
        super::job::lower_priority();
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(turn) = q.turns.pop_front() {
                drop(q);
                turn.turn(fenced.as_ref().map(|_| ()).map_err(String::as_str));
                q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                continue;
            }
            q.waiting += 1;
            let (next, timeout) = self
                .ready
                .wait_timeout(q, QUIET)
                .unwrap_or_else(|e| e.into_inner());
            q = next;
            q.waiting -= 1;
            q.woken = q.woken.saturating_sub(1);
            if timeout.timed_out() && q.turns.is_empty() {
                q.threads -= 1;
                return;
            }
        }
    }
}

/// The service's one unconfined thread that starts tenants' threads.
struct Spawner {
    requests: Mutex<mpsc::Sender<Arc<Executor>>>,
}

fn spawner() -> &'static Spawner {
    static S: OnceLock<Spawner> = OnceLock::new();
    S.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Arc<Executor>>();
        std::thread::Builder::new()
            .name("weir-spawner".into())
            .spawn(move || {
                for executor in rx {
                    let name = executor.name.clone();
                    let e = executor.clone();
                    if let Err(err) = std::thread::Builder::new()
                        .name(name.clone())
                        .spawn(move || e.serve())
                    {
                        tracing::error!("{name}: no thread: {err}; retrying");
                        std::thread::sleep(Duration::from_millis(100));
                        spawner().start(executor);
                    }
                }
            })
            .expect("the spawner thread starts");
        Spawner {
            requests: Mutex::new(tx),
        }
    })
}

impl Spawner {
    fn start(&self, executor: Arc<Executor>) {
        let _ = self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(executor);
    }
}

/// Start the spawner now, from an unconfined thread.
pub(super) fn start() {
    spawner();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    struct Record {
        seen: mpsc::Sender<(std::thread::ThreadId, bool)>,
    }

    impl Turn for Record {
        fn turn(self: Arc<Self>, fenced: Result<(), &str>) {
            std::thread::sleep(Duration::from_millis(2));
            let _ = self
                .seen
                .send((std::thread::current().id(), fenced.is_ok()));
        }
    }

    #[test]
    fn many_turns_share_a_few_fenced_threads() {
        start();
        let dir = tempfile::tempdir().unwrap();
        let (root, components) = (dir.path().join("root"), dir.path().join("components"));
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&components).unwrap();
        let executor = Executor::new("t", Fence::for_tenant(&root, &components, None));
        let (tx, rx) = mpsc::channel();
        for _ in 0..200 {
            executor.submit(Arc::new(Record { seen: tx.clone() }));
        }
        let mut threads = HashSet::new();
        for _ in 0..200 {
            let (thread, fenced) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert!(fenced);
            threads.insert(thread);
        }
        assert!(threads.len() <= executor.max_threads, "{threads:?}");
        assert!(executor.threads() <= executor.max_threads);
        assert!(!threads.contains(&std::thread::current().id()));
    }
}
