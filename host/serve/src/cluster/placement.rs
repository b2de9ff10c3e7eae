//! What this node runs: every pipeline that should run whose slot it
//! holds, and a member of every group pipeline; everything else it
//! stops. Checked each second and whenever the store or the held slots
//! change. Starting one waits for its checkpoint's lease (an earlier owner
//! still stopping, or silent until the lease expires), so starts and
//! stops run on threads of their own and report back; a start that fails
//! is tried again with doubling backoff.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use super::Cluster;
use super::board::{NodeReport, PipelineReport};
use super::slots::slot_of;
use crate::AppState;
use crate::store::{PipelineRow, TenantRow};
use crate::supervisor::NotStarted;

type Key = (String, String);

const TICK: Duration = Duration::from_secs(1);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

enum Phase {
    Starting,
    Running,
    /// The start failed; tried again at `retry` (`None`: it would only
    /// fail the same way, until its spec or tenant changes).
    Failed {
        why: String,
        retry: Option<Instant>,
        backoff: Duration,
        restarts: u64,
    },
    Stopping,
}

struct Placed {
    /// Of the spec and the tenant it was started with: a change restarts it.
    fingerprint: u64,
    phase: Phase,
}

/// A pipeline this node should run, with its tenant and fingerprint.
struct Wanted {
    row: PipelineRow,
    tenant: TenantRow,
    fingerprint: u64,
}

enum Done {
    Started(Key, Result<(), NotStarted>),
    Stopped(Key),
}

fn fingerprint(p: &PipelineRow, t: &TenantRow) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.spec.hash(&mut h);
    p.component.hash(&mut h);
    p.upgrade.hash(&mut h);
    serde_json::to_string(t).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// Whether a stored spec runs as a group member (`[group]`), which every
/// node runs.
fn grouped(spec: &str) -> bool {
    toml::from_str::<toml::Table>(spec).is_ok_and(|t| t.contains_key("group"))
}

struct Placement {
    state: AppState,
    cluster: Arc<Cluster>,
    placed: HashMap<Key, Placed>,
    /// Whether each spec (by its text's hash) is a group's.
    grouped: HashMap<u64, bool>,
    done: Sender<Done>,
    finished: Receiver<Done>,
}

/// Place pipelines for good (its own thread).
pub fn run(state: AppState, cluster: Arc<Cluster>) {
    let (done, finished) = channel();
    let mut p = Placement {
        state,
        cluster,
        placed: HashMap::new(),
        grouped: HashMap::new(),
        done,
        finished,
    };
    loop {
        {
            let cluster = p.cluster.clone();
            let _step = cluster.placing.lock().unwrap_or_else(|e| e.into_inner());
            p.tick();
        }
        p.cluster.wake.wait(TICK);
    }
}

impl Placement {
    fn is_grouped(&mut self, spec: &str) -> bool {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        spec.hash(&mut h);
        *self
            .grouped
            .entry(h.finish())
            .or_insert_with(|| grouped(spec))
    }

    /// The pipelines this node should run now, and every stored one's key
    /// (one read of the store per step).
    /// `None` when the store cannot be read (nothing is stopped for it).
    fn wanted(&mut self) -> Option<(BTreeMap<Key, Wanted>, HashSet<Key>)> {
        let store = self.state.store.clone();
        let (rows, tenants) = match (store.pipelines(None), store.tenants()) {
            (Ok(r), Ok(t)) => (r, t),
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!("cluster: reading the store: {e}");
                return None;
            }
        };
        let tenants: HashMap<String, TenantRow> =
            tenants.into_iter().map(|t| (t.name.clone(), t)).collect();
        let held = self.cluster.held();
        let mut want = BTreeMap::new();
        let stored: HashSet<Key> = rows
            .iter()
            .map(|p| (p.tenant.clone(), p.name.clone()))
            .collect();
        for p in rows {
            let Some(t) = tenants.get(&p.tenant) else {
                continue;
            };
            if p.desired != "running" {
                continue;
            }
            let mine = self.is_grouped(&p.spec)
                || held.contains(&slot_of(&p.tenant, &p.name, self.cluster.slots));
            if mine {
                let key = (p.tenant.clone(), p.name.clone());
                let fingerprint = fingerprint(&p, t);
                let tenant = t.clone();
                want.insert(
                    key,
                    Wanted {
                        row: p,
                        tenant,
                        fingerprint,
                    },
                );
            }
        }
        Some((want, stored))
    }

    fn tick(&mut self) {
        // Shutting down: the supervisor stops what runs; nothing starts.
        if self
            .cluster
            .leaving
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        while let Ok(d) = self.finished.try_recv() {
            match d {
                Done::Started(key, r) => {
                    if let Some(pl) = self.placed.get_mut(&key) {
                        pl.phase = match r {
                            Ok(()) => Phase::Running,
                            Err(e) => {
                                tracing::warn!(tenant = %key.0, pipeline = %key.1, "cluster: start failed: {e}");
                                let (backoff, restarts) = match &pl.phase {
                                    Phase::Failed {
                                        backoff, restarts, ..
                                    } => ((*backoff * 2).min(MAX_BACKOFF), restarts + 1),
                                    _ => (FIRST_BACKOFF, 0),
                                };
                                Phase::Failed {
                                    retry: e.retry.then(|| Instant::now() + backoff),
                                    why: e.why,
                                    backoff,
                                    restarts,
                                }
                            }
                        };
                    }
                }
                Done::Stopped(key) => {
                    self.placed.remove(&key);
                }
            }
        }
        let Some((want, stored)) = self.wanted() else {
            self.report();
            return;
        };
        // Stop what is no longer this node's, or changed.
        for (key, pl) in self.placed.iter_mut() {
            let keep = want
                .get(key)
                .is_some_and(|w| w.fingerprint == pl.fingerprint);
            if keep || matches!(pl.phase, Phase::Starting | Phase::Stopping) {
                continue;
            }
            let deleted = !stored.contains(key);
            pl.phase = Phase::Stopping;
            let (state, done, key) = (self.state.clone(), self.done.clone(), key.clone());
            let wake = self.cluster.wake.clone();
            spawn("stop", move || {
                if deleted {
                    state.supervisor.forget(&key.0, &key.1);
                } else {
                    state.supervisor.stop(&key.0, &key.1);
                }
                let _ = done.send(Done::Stopped(key));
                wake.now();
            });
        }
        // Start what is this node's and not running (or due for a retry).
        for (key, w) in &want {
            let due = match self.placed.get(key) {
                None => true,
                Some(Placed {
                    phase: Phase::Failed { retry, .. },
                    fingerprint: f,
                }) => *f != w.fingerprint || retry.is_some_and(|r| Instant::now() >= r),
                Some(_) => false,
            };
            if !due {
                continue;
            }
            let f = w.fingerprint;
            match self.placed.get_mut(key) {
                // A failed start due again keeps its backoff (reported as
                // restarting); a changed spec starts afresh.
                Some(pl) => {
                    if pl.fingerprint != f {
                        pl.phase = Phase::Starting;
                    }
                    pl.fingerprint = f;
                }
                None => {
                    self.placed.insert(
                        key.clone(),
                        Placed {
                            fingerprint: f,
                            phase: Phase::Starting,
                        },
                    );
                }
            }
            let (state, cluster, done) =
                (self.state.clone(), self.cluster.clone(), self.done.clone());
            let (p, t, key) = (w.row.clone(), w.tenant.clone(), key.clone());
            spawn("start", move || {
                let r = start(&state, &cluster, &p, &t);
                let _ = done.send(Done::Started(key, r));
                cluster.wake.now();
            });
        }
        self.report();
    }

    /// Tell the cluster what this node runs and how.
    fn report(&self) {
        let board = &self.cluster.board;
        let mut names = Vec::new();
        for (key, pl) in &self.placed {
            let name = format!("{}/{}", key.0, key.1);
            let report = match &pl.phase {
                Phase::Starting => PipelineReport {
                    state: "starting".into(),
                    restarts: 0,
                    last_error: None,
                    lag: None,
                },
                Phase::Failed {
                    why,
                    restarts,
                    retry,
                    ..
                } => PipelineReport {
                    state: if retry.is_some() {
                        "restarting"
                    } else {
                        "failed"
                    }
                    .into(),
                    restarts: *restarts,
                    last_error: Some(why.clone()),
                    lag: None,
                },
                Phase::Running | Phase::Stopping => {
                    let s = self.state.supervisor.status(&key.0, &key.1);
                    PipelineReport {
                        state: s.state,
                        restarts: s.restarts,
                        last_error: s.last_error,
                        lag: s.progress.as_ref().and_then(|p| p.lag),
                    }
                }
            };
            board.report_pipeline(&name, Some(report));
            names.push(name);
        }
        for said in board.said() {
            if !names.contains(&said) {
                board.report_pipeline(&said, None);
            }
        }
        board.report_node(&NodeReport {
            node: self.cluster.node().to_string(),
            url: self.cluster.url.get().cloned(),
            slots: self.cluster.held().into_iter().collect(),
            pipelines: names,
            config_lag: self.cluster.log.lag(),
        });
    }
}

fn spawn(what: &str, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new()
        .name(format!("weir-cluster-{what}"))
        .spawn(f)
    {
        tracing::error!("cluster: a thread to {what} a pipeline: {e}");
    }
}

/// Start tenant `t`'s pipeline `p` on this node: its component fetched if
/// this node has not got it, its spec confined as on one node.
fn start(
    state: &AppState,
    cluster: &Cluster,
    p: &PipelineRow,
    t: &TenantRow,
) -> Result<(), NotStarted> {
    if p.has_component() {
        let path = crate::components::bytes_path(state, &p.component);
        // The bucket not reached: worth another try.
        cluster
            .fetch_component(&p.component, &path, &state.data.join("tmp"))
            .map_err(|why| NotStarted { why, retry: true })?;
    }
    let refused = |why| NotStarted { why, retry: false };
    let spec = crate::pipelines::startable(state, t, p).map_err(refused)?;
    if let Some(why) = crate::quota::over(state, t) {
        return Err(refused(why));
    }
    state
        .supervisor
        .start_with(&state.store, t, &p.name, &spec, p.upgrade)
}
