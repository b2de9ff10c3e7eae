//! A served pipeline's phases, one turn at a time: built (on a thread of
//! its own), run a step at a time, parked, restarted after a backoff, or
//! handed a thread of its own (see `task.rs` for how turns are taken).

use std::sync::atomic::Ordering;
use std::sync::mpsc::SyncSender;
use std::task::Waker;
use std::time::{Duration, Instant};

use super::NotStarted;
use super::job::{FIRST_BACKOFF, Job, MAX_BACKOFF, permanent};
use weir_engine::{EngineError, Step, Wait};
use weir_pipeline::{BuildError, Query};

pub(super) type Build = Box<dyn Fn() -> Result<Query, BuildError> + Send>;

/// Where a pipeline stands between turns.
pub(super) enum Phase {
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
pub(super) enum Next {
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

pub(super) struct Inner {
    pub job: Job,
    pub phase: Phase,
    pub build: Build,
}

impl Inner {
    pub(super) fn turn(&mut self, waker: &Waker) -> Next {
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
    pub(super) fn build(&mut self) -> Next {
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
    pub(super) fn refuse(&mut self, why: &str) -> Next {
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
