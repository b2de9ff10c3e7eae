//! `weir serve --cluster`: the service on several machines with Kafka as
//! its control plane and no cluster manager of weir's own (Kafka Connect's
//! distributed mode is the model). Every node runs the same binary with
//! the same settings and answers every API call:
//!
//! - shared state (tenants, components, pipelines, desired states) is a
//!   compacted config topic every node reads into its SQLite store
//!   ([`config_log`]); component bytes are on the object store by SHA-256;
//! - pipelines hash onto slots the nodes share through Kafka's group
//!   protocol ([`slots`]), and each node runs the pipelines of its slots
//!   and a member of every group pipeline ([`placement`]); checkpoints are
//!   on the object store, so a moved pipeline resumes where it was, and
//!   the checkpoint lease fences its earlier run;
//! - what each node runs and how it goes is a compacted status topic
//!   ([`board`]), read by every node for listings and `/v1/cluster`.

pub mod board;
mod client;
mod config;
mod config_log;
mod forward;
mod overview;
pub mod placement;
pub mod slots;
mod topics;

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

pub use config::ClusterConfig;
pub use config_log::{ConfigLog, WriteError};
pub use overview::{metrics, overview};

use board::Board;
use weir_connectors::checkpoints::ObjectFiles;

/// This node's part in the cluster.
pub struct Cluster {
    pub config: ClusterConfig,
    pub log: Arc<ConfigLog>,
    pub(crate) board: Arc<Board>,
    held: OnceLock<Arc<slots::Held>>,
    /// The slots topic's partitions (the configured count, unless the
    /// topic was made with another).
    pub slots: u32,
    files: ObjectFiles,
    pub wake: Arc<Wake>,
    /// Where this node's API listens, once it does.
    pub(crate) url: OnceLock<String>,
    /// Set when the node shuts down: placement starts and reports nothing
    /// more.
    pub(crate) leaving: std::sync::atomic::AtomicBool,
    /// Held by each placement step, so that leaving waits for one under
    /// way: no report of this node's follows its last word.
    pub(crate) placing: Mutex<()>,
}

impl Cluster {
    /// Make the control plane's topics if missing and read the config
    /// topic into `store` (on a thread of its own, from here on); returns
    /// once the store holds the cluster's state.
    pub fn open(
        config: ClusterConfig,
        store: Arc<crate::store::Store>,
    ) -> Result<Arc<Cluster>, String> {
        let slots = topics::ensure(&config)?;
        let files = ObjectFiles::open(&config.object_store)
            .map_err(|e| format!("the object store {}: {e}", config.object_store))?;
        let log = Arc::new(ConfigLog::new(&config)?);
        let board = Board::new(&config)?;
        let wake = Arc::new(Wake::default());
        let c = Arc::new(Cluster {
            config,
            log: log.clone(),
            board: board.clone(),
            held: OnceLock::new(),
            slots,
            files,
            wake: wake.clone(),
            url: OnceLock::new(),
            leaving: std::sync::atomic::AtomicBool::new(false),
            placing: Mutex::new(()),
        });
        std::thread::Builder::new()
            .name("weir-cluster-config".into())
            .spawn(move || log.read_into(store, move || wake.now()))
            .map_err(|e| e.to_string())?;
        std::thread::Builder::new()
            .name("weir-cluster-status".into())
            .spawn(move || board.read())
            .map_err(|e| e.to_string())?;
        if !c.log.wait_loaded(Duration::from_secs(120)) {
            return Err(format!(
                "the config topic {} was not read within 2 minutes (is Kafka at {} reachable?)",
                c.config.config_topic(),
                c.config.bootstrap_servers
            ));
        }
        Ok(c)
    }

    /// Join the nodes' group: from here on this node holds slots.
    pub fn join(&self) -> Result<(), String> {
        let wake = self.wake.clone();
        let held = slots::join(&self.config, move || wake.now())?;
        let _ = self.held.set(held);
        Ok(())
    }

    pub fn node(&self) -> &str {
        &self.config.node
    }

    /// Say where this node's API listens (for `/v1/cluster`).
    pub fn listening(&self, url: String) {
        let _ = self
            .url
            .set(self.config.advertise_url.clone().unwrap_or(url));
    }

    /// How many nodes are alive, this one counted even before its first
    /// report is read back: a tenant's request rate is shared among them.
    pub fn live_nodes(&self) -> usize {
        self.board.live_count().max(1)
    }

    /// The slots this node holds.
    pub fn held(&self) -> std::collections::BTreeSet<u32> {
        self.held.get().map(|h| h.now()).unwrap_or_default()
    }

    /// Where tenant `tenant`'s checkpoints live (no trailing `/`).
    pub fn checkpoints_of(&self, tenant: &str) -> String {
        format!("{}/checkpoints/{tenant}", self.config.object_store)
    }

    /// Where tenant `tenant`'s pipeline `name` keeps its checkpoint.
    pub fn checkpoint_of(&self, tenant: &str, name: &str) -> String {
        format!("{}/{name}", self.checkpoints_of(tenant))
    }

    fn component_object(id: &str) -> String {
        format!("components/{id}.wasm")
    }

    /// Put a validated component's bytes on the object store (write-once).
    pub fn put_component(&self, id: &str, bytes: &[u8]) -> Result<(), String> {
        self.files
            .create(&Self::component_object(id), bytes)
            .map_err(|e| e.to_string())
    }

    /// Make sure component `id`'s bytes are at `path` on this node,
    /// fetching (and checking) them from the object store if not.
    pub fn fetch_component(
        &self,
        id: &str,
        path: &std::path::Path,
        tmp: &std::path::Path,
    ) -> Result<(), String> {
        if path.exists() {
            return Ok(());
        }
        let bytes = self
            .files
            .read(&Self::component_object(id))
            .map_err(|e| format!("fetching component {id}: {e}"))?
            .ok_or_else(|| format!("component {id} is not on the object store"))?;
        verified(id, &bytes)?;
        weir_engine::durable::create_dir_all(tmp).map_err(|e| e.to_string())?;
        let mut f = tempfile::Builder::new()
            .suffix(".wasm")
            .tempfile_in(tmp)
            .map_err(|e| e.to_string())?;
        std::io::Write::write_all(f.as_file_mut(), &bytes).map_err(|e| e.to_string())?;
        f.as_file().sync_all().map_err(|e| e.to_string())?;
        f.persist(path).map_err(|e| e.error.to_string())?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        weir_engine::durable::sync_dir(dir).map_err(|e| e.to_string())
    }

    /// Remove the checkpoints under `dir` (relative to the object store)
    /// once no live node reports running `pipelines` (waiting at most a
    /// session timeout and a lease's time for them to stop).
    fn purge(&self, dir: &str, pipelines: &[String]) -> Result<(), String> {
        let until =
            std::time::Instant::now() + self.config.session_timeout + Duration::from_secs(20);
        while pipelines.iter().any(|p| !self.board.runners(p).is_empty()) {
            if std::time::Instant::now() > until {
                return Err(
                    "a node still runs the pipeline; purge again once it has stopped".into(),
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.files.remove_all(dir).map_err(|e| e.to_string())
    }

    /// Remove a deleted pipeline's checkpoint.
    pub fn purge_checkpoint(&self, tenant: &str, name: &str) -> Result<(), String> {
        self.purge(
            &format!("checkpoints/{tenant}/{name}"),
            &[format!("{tenant}/{name}")],
        )
    }

    /// Remove a deleted tenant's checkpoints, so a later tenant of the
    /// same name starts empty.
    pub fn purge_tenant(&self, tenant: &str, pipelines: &[String]) -> Result<(), String> {
        let running: Vec<String> = pipelines.iter().map(|p| format!("{tenant}/{p}")).collect();
        self.purge(&format!("checkpoints/{tenant}"), &running)
    }

    /// How a pipeline not run by this node is doing, by the live nodes
    /// that report running it.
    pub fn runners(&self, tenant: &str, name: &str) -> Vec<(String, board::PipelineReport)> {
        self.board.runners(&format!("{tenant}/{name}"))
    }

    /// Shutting down: placement starts nothing more and stops reporting
    /// (the supervisor stops this node's pipelines next).
    pub fn shutting_down(&self) {
        self.leaving
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Leave: say this node runs nothing and is gone, and leave the group,
    /// so its pipelines move at once rather than after the session timeout.
    pub fn leave(&self) {
        self.shutting_down();
        let _no_placement = self.placing.lock().unwrap_or_else(|e| e.into_inner());
        for p in self.board.said() {
            self.board.report_pipeline(&p, None);
        }
        self.board.gone(self.node());
        self.board.flush();
        if let Some(h) = self.held.get() {
            h.leave();
        }
    }
}

/// Wakes placement early, when the store or the held slots change.
#[derive(Default)]
pub struct Wake {
    raised: Mutex<bool>,
    cond: Condvar,
}

impl Wake {
    pub fn now(&self) {
        *self.raised.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cond.notify_all();
    }

    /// Sleep up to `d` or until raised.
    pub fn wait(&self, d: Duration) {
        let mut r = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        if !*r {
            r = self
                .cond
                .wait_timeout(r, d)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *r = false;
    }
}

/// Bytes fetched for component `id` must hash to it: whoever can write the
/// bucket (outside weir's trust, SECURITY.md) cannot swap a tenant's guest.
fn verified(id: &str, bytes: &[u8]) -> Result<(), String> {
    if weir_runtime::sha256_hex(bytes) == id {
        Ok(())
    } else {
        Err(format!(
            "component {id} on the object store does not hash to its id; refusing to run it"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::verified;

    #[test]
    fn component_bytes_that_do_not_hash_to_their_id_are_refused() {
        let bytes = b"\0asm the real guest";
        let id = weir_runtime::sha256_hex(bytes);
        assert_eq!(verified(&id, bytes), Ok(()));
        let e = verified(&id, b"\0asm a swapped guest").unwrap_err();
        assert!(e.contains("does not hash to its id"), "{e}");
    }
}
