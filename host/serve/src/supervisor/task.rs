//! A served pipeline as a task that takes turns on its tenant's executor:
//! a turn builds the query, runs one batch, or parks the pipeline (waiting
//! for data, a trigger's interval or a restart's backoff) without a thread.
//! Continuous and group queries, which run per-partition threads of their
//! own, and queries that wait for data by blocking (a Kafka consumer's
//! long poll) are handed a thread of their own instead.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use super::NotStarted;
use super::deadlines::{self, Deadline, Waiter};
use super::executor::{Executor, Turn};
use super::job::{FIRST_BACKOFF, Job, MAX_BACKOFF, permanent};
use weir_engine::{EngineError, Step, Wait};
use weir_pipeline::{BuildError, Query};

pub(super) type Build = Box<dyn Fn() -> Result<Query, BuildError> + Send>;

/// Where a pipeline stands between turns.
enum Phase {
    /// Not built yet; `ready` hears how the build went.
    Start(SyncSender<Result<(), NotStarted>>),
    Running {
        query: Query,
        backoff: Duration,
        started: Instant,
    },
    /// Waiting to be built again after a failure.
    Restarting {
        at: Instant,
        backoff: Duration,
        why: String,
    },
    /// Ended, or handed to a thread of its own.
    Gone,
}

/// What a turn leaves to do.
enum Next {
    /// More to do now: queue again (behind the tenant's other pipelines).
    Again,
    /// Nothing until a wake-up, or this time at the latest.
    Park(Instant),
    /// A query that runs on threads of its own.
    Detach(Query),
    /// Build (or rebuild) the query, on a thread of its own: building
    /// may wait on a broker for seconds (a transactional producer fencing
    /// its predecessor), and must not hold one of the tenant's few threads.
    Build,
    Done,
}

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
    /// Raised once the query is dropped (its checkpoint and sinks released).
    pub(super) ended: Arc<AtomicBool>,
}

struct Inner {
    job: Job,
    phase: Phase,
    build: Build,
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
            ended: Arc::new(AtomicBool::new(false)),
        });
        task.executor.submit(task.clone());
        task
    }

    pub fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(self.clone())
    }

    fn end(&self) {
        self.state.store(ENDED, Ordering::Release);
        self.ended.store(true, Ordering::Release);
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
                let spawned =
                    std::thread::Builder::new()
                        .name("weir-build".into())
                        .spawn(move || {
                            let mut guard = task.inner.lock().unwrap_or_else(|e| e.into_inner());
                            let next = guard.as_mut().map_or(Next::Done, Inner::build);
                            task.after(guard, next);
                        });
                if let Err(e) = spawned {
                    tracing::warn!("serve: no thread to build a pipeline on ({e}); building here");
                    let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
                    let next = guard.as_mut().map_or(Next::Done, Inner::build);
                    self.after(guard, next);
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

impl Inner {
    fn turn(&mut self, waker: &Waker) -> Next {
        match std::mem::replace(&mut self.phase, Phase::Gone) {
            start @ Phase::Start(_) => {
                self.phase = start;
                Next::Build
            }
            Phase::Running {
                query,
                backoff,
                started,
            } => self.step(query, backoff, started, waker),
            Phase::Restarting { at, backoff, why } => self.restart(at, backoff, why),
            Phase::Gone => Next::Done,
        }
    }

    /// Build the query (first, or again after a failure).
    fn build(&mut self) -> Next {
        match std::mem::replace(&mut self.phase, Phase::Gone) {
            Phase::Start(ready) => match (self.build)() {
                Ok(query) => {
                    self.job.watch_stop(&query);
                    let _ = ready.send(Ok(()));
                    self.job.metrics.set_running(&self.job.labels(), true);
                    self.running(query, FIRST_BACKOFF)
                }
                Err(e) => {
                    let _ = ready.send(Err(NotStarted::of(&e)));
                    Next::Done
                }
            },
            Phase::Restarting { backoff, why, .. } => self.rebuild(backoff, why),
            other => {
                self.phase = other;
                Next::Again
            }
        }
    }

    /// A query just built: run it here a step at a time, or hand it a
    /// thread of its own (continuous and group queries, and queries whose
    /// sources wake them only by blocking, such as Kafka's).
    fn running(&mut self, mut query: Query, backoff: Duration) -> Next {
        if query.stepwise().is_none_or(|q| !q.parks_when_idle()) {
            return Next::Detach(query);
        }
        self.phase = Phase::Running {
            query,
            backoff,
            started: Instant::now(),
        };
        Next::Again
    }

    fn step(&mut self, mut query: Query, backoff: Duration, started: Instant, w: &Waker) -> Next {
        let q = query.stepwise().expect("only stepwise queries run here");
        let labels = self.job.labels();
        let step = q.step(&mut |p| self.job.report(&labels, p));
        let next = match step {
            Ok(Step::Ran) => Next::Again,
            Ok(Step::Wait(Wait::Until(at))) => Next::Park(at),
            Ok(Step::Wait(Wait::ForData { polls })) => {
                Next::Park(Instant::now() + q.wake_on_data(w, polls))
            }
            Ok(Step::Finished(_)) => {
                self.stopped();
                return Next::Done;
            }
            Err(e) => {
                // Release its checkpoint (and sinks) before anything
                // restarts it.
                drop(query);
                return self.failed(e, backoff, started);
            }
        };
        self.phase = Phase::Running {
            query,
            backoff,
            started,
        };
        next
    }

    fn stopped(&self) {
        self.job.set(|s| s.state = "stopped".into());
        self.job.metrics.set_running(&self.job.labels(), false);
    }

    /// After a failed run: stop for good (stopped, or a failure a restart
    /// would repeat), else restart after a backoff.
    fn failed(&mut self, err: EngineError, backoff: Duration, started: Instant) -> Next {
        let why = err.to_string();
        // A run that lasted starts the backoff over.
        let backoff = match started.elapsed() > MAX_BACKOFF {
            true => FIRST_BACKOFF,
            false => backoff,
        };
        // Stopped by request: the error (often the interrupted guest's) is
        // the stop's doing, and the checkpoint re-runs the batch.
        if self.job.stop.load(Ordering::Relaxed) {
            self.stopped();
            return Next::Done;
        }
        if permanent(&err) {
            self.job.failed(&why);
            self.job.metrics.set_running(&self.job.labels(), false);
            return Next::Done;
        }
        self.schedule_restart(backoff, why)
    }

    fn schedule_restart(&mut self, backoff: Duration, why: String) -> Next {
        self.job.restarting(&why, backoff);
        let at = Instant::now() + backoff;
        self.phase = Phase::Restarting { at, backoff, why };
        Next::Park(at)
    }

    fn restart(&mut self, at: Instant, backoff: Duration, why: String) -> Next {
        if self.job.stop.load(Ordering::Relaxed) {
            self.stopped();
            return Next::Done;
        }
        self.phase = Phase::Restarting { at, backoff, why };
        if Instant::now() < at {
            return Next::Park(at);
        }
        Next::Build
    }

    fn rebuild(&mut self, backoff: Duration, why: String) -> Next {
        if self.job.stop.load(Ordering::Relaxed) {
            self.stopped();
            return Next::Done;
        }
        let backoff = (backoff * 2).min(MAX_BACKOFF);
        match (self.build)() {
            Ok(query) => {
                self.job.watch_stop(&query);
                self.running(query, backoff)
            }
            // Building refused for good (e.g. its settings no longer
            // match the checkpoint): stop here.
            Err(BuildError::Engine(e)) if permanent(&e) => {
                self.job.failed(&e.to_string());
                self.job.metrics.set_running(&self.job.labels(), false);
                Next::Done
            }
            Err(e) => {
                tracing::warn!(
                    tenant = %self.job.tenant,
                    pipeline = %self.job.pipeline,
                    "restart failed: {e}"
                );
                self.schedule_restart(backoff, why)
            }
        }
    }

    /// The fence could not be entered: run nothing.
    fn refuse(&mut self, why: &str) -> Next {
        match std::mem::replace(&mut self.phase, Phase::Gone) {
            Phase::Start(ready) => {
                let _ = ready.send(Err(NotStarted {
                    why: why.to_string(),
                    retry: false,
                }));
            }
            _ => self.job.failed(why),
        }
        Next::Done
    }
}
