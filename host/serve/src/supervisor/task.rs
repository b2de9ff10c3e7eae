//! A served pipeline as a task that takes turns on its tenant's executor:
//! a turn builds the query, runs one batch, or parks the pipeline (waiting
//! for data, a trigger's interval or a restart's backoff) without a thread.
//! Continuous and group queries, which run per-partition threads of their
//! own, and queries that wait for data by blocking (a Kafka consumer's
//! long poll) are handed a thread of their own instead.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Wake, Waker};

use super::NotStarted;
use super::deadlines::{self, Deadline, Waiter};
use super::executor::{Executor, Turn};
use super::job::Job;
use super::phases::{Build, Inner, Next, Phase};

// How a task stands with its executor; a wake-up moves it at most once
// into the queue.
const IDLE: u8 = 0;
const QUEUED: u8 = 1;
const RUNNING: u8 = 2;
/// Woken while running: queue again when the turn ends.
const RUNNING_WOKEN: u8 = 3;
const ENDED: u8 = 4;

pub(super) struct Task {
    executor: Arc<Executor>,
    state: AtomicU8,
    deadline: Deadline,
    inner: Mutex<Option<Inner>>,
}

impl Task {
    /// A pipeline to be built on `executor`; `ready` hears how that went.
    pub fn start(
        executor: Arc<Executor>,
        job: Job,
        build: Build,
        ready: SyncSender<Result<(), NotStarted>>,
    ) -> Arc<Task> {
        let task = Arc::new(Task {
            executor,
            state: AtomicU8::new(QUEUED),
            deadline: Deadline::default(),
            inner: Mutex::new(Some(Inner {
                job,
                phase: Phase::Start(ready),
                build,
            })),
        });
        task.executor.submit(task.clone());
        task
    }

    fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(self.clone())
    }

    /// Its query is dropped (its checkpoint and sinks released).
    fn end(&self) {
        self.state.store(ENDED, Ordering::Release);
    }

    pub fn ended(&self) -> bool {
        self.state.load(Ordering::Acquire) == ENDED
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut now = self.state.load(Ordering::Acquire);
        loop {
            let next = match now {
                IDLE => QUEUED,
                RUNNING => RUNNING_WOKEN,
                _ => return,
            };
            match self
                .state
                .compare_exchange(now, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next == QUEUED => return self.executor.submit(self.clone()),
                Ok(_) => return,
                Err(actual) => now = actual,
            }
        }
    }
}

impl Waiter for Task {
    fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    fn due(self: Arc<Self>) {
        self.wake_by_ref();
    }
}

impl Turn for Task {
    fn turn(self: Arc<Self>, fenced: Result<(), &str>) {
        if self
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        deadlines::clear(&*self);
        let waker = self.waker();
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let next = match (guard.as_mut(), fenced) {
            (None, _) => Next::Done,
            (Some(inner), Ok(())) => inner.turn(&waker),
            (Some(inner), Err(why)) => inner.refuse(why),
        };
        self.after(guard, next);
    }
}

impl Task {
    fn build(self: &Arc<Self>) {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let next = guard.as_mut().map_or(Next::Done, Inner::build);
        self.after(guard, next);
    }

    /// Do what a turn left to do.
    fn after(self: &Arc<Self>, mut guard: MutexGuard<'_, Option<Inner>>, next: Next) {
        match next {
            Next::Again => {
                drop(guard);
                self.state.store(QUEUED, Ordering::Release);
                self.executor.submit(self.clone());
            }
            Next::Park(at) => {
                drop(guard);
                deadlines::wake_at(self, at);
                if self
                    .state
                    .compare_exchange(RUNNING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // Woken during the turn: go again.
                    self.state.store(QUEUED, Ordering::Release);
                    self.executor.submit(self.clone());
                }
            }
            Next::Build => {
                drop(guard);
                // Started from a fenced thread, the build's thread is
                // fenced too.
                let task = self.clone();
                let spawned = std::thread::Builder::new()
                    .name("weir-build".into())
                    .spawn(move || task.build());
                if let Err(e) = spawned {
                    tracing::warn!("serve: no thread to build a pipeline on ({e}); building here");
                    self.build();
                }
            }
            Next::Detach(query) => {
                let Inner { job, build, .. } = guard.take().expect("taken once");
                drop(guard);
                let task = self.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("weir-pipeline-{}-{}", job.tenant, job.pipeline))
                    .spawn(move || {
                        job.supervise(query, build);
                        task.end();
                    });
                if let Err(e) = spawned {
                    tracing::error!("serve: no thread for a pipeline of its own: {e}");
                    self.end();
                }
            }
            Next::Done => {
                *guard = None;
                drop(guard);
                self.end();
            }
        }
    }
}
