//! The WASM runtime: loads, validates and caches components, and runs them
//! as engine [`Transform`](weir_engine::Transform)s.
//!
//! One [`Runtime`] per process holds the wasmtime `Engine`, the `Linker` and
//! the epoch ticker; one [`TransformComponent`] per loaded binary holds the
//! shared instance-pre; one [`WasmTransform`] per partition task owns its own
//! `Store`, so guests share nothing at run time.

mod abort;
mod bindings;
mod cache;
mod component;
mod convert;
mod guest_event;
mod inspect;
mod instance;
mod json_import;
mod output_pipe;
mod panic_report;
mod sandbox;
mod state_imports;
mod store_data;
pub mod tenant;
mod ticker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine};

pub use abort::Abort;
pub use bindings::{EXPORT_INTERFACE, PACKAGE, RECORD_INTERFACE, WORLD};
pub use cache::{CacheOutcome, default_cache_dir, sha256_hex};
use component::ComponentInner;
pub use component::{ComponentInfo, TransformComponent};
pub use guest_event::{GUEST_LOG_TARGET, GuestEvent};
pub use inspect::{Interfaces, LoadError};
pub use instance::{CallMode, WasmTransform};
pub use sandbox::{Sandbox, check_sandbox};
pub use store_data::GuestMetrics;

use bindings::{
    FullTransformer, GuestIndices, RecordIndices, STATEFUL_IMPORTS, TIMER_INTERFACE, TimerIndices,
};
use store_data::StoreData;

/// Per-instance resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest linear memory a guest may grow to, in bytes.
    pub max_memory: usize,
    /// Longest one guest call (init, a batch, a record) may run.
    pub call_deadline: Duration,
    /// Most keyed state one partition task may hold (keys, values and
    /// per-entry overhead), in bytes; it lives in host memory.
    pub max_state: usize,
    /// Fuel (about one unit per wasm instruction) one call may burn: a
    /// deterministic CPU budget, the same on any machine. Needs a component
    /// loaded with [`Runtime::load_metered`].
    pub fuel: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: 256 << 20,
            call_deadline: Duration::from_secs(10),
            max_state: 1 << 30,
            fuel: None,
        }
    }
}

/// How the process-wide runtime is set up.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Where compiled components are cached; `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// Granularity of CPU deadlines.
    pub epoch_tick: Duration,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            cache_dir: default_cache_dir(),
            epoch_tick: Duration::from_millis(5),
        }
    }
}

/// Errors setting up the runtime itself (not a particular component).
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the WebAssembly runtime: {0}")]
pub struct RuntimeError(String);

/// The process-wide WebAssembly runtime.
pub struct Runtime {
    plain: Engines,
    /// A second engine with fuel metering, built on first use: fuel
    /// instrumentation slows every guest compiled with it, so only
    /// pipelines that set a fuel budget pay for it.
    metered: std::sync::OnceLock<Result<Engines, String>>,
    options: RuntimeOptions,
    /// Components loaded and still in use, by what they were loaded from:
    /// a thousand pipelines of one component share one compiled copy.
    loaded: std::sync::Mutex<HashMap<Loaded, std::sync::Weak<ComponentInner>>>,
}

/// What a loaded component is shared by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Loaded {
    sha256: String,
    path: PathBuf,
    metered: bool,
}

impl Runtime {
    /// Drop the compiled code of the component whose bytes hash to
    /// `content_hash` from the cache (a refused or deleted upload).
    pub fn forget_compiled(&self, content_hash: &str) {
        if let Some(dir) = self.cache_dir() {
            cache::remove(dir, content_hash);
        }
    }

    /// Where compiled components are cached, if anywhere.
    pub fn cache_dir(&self) -> Option<&std::path::Path> {
        self.options.cache_dir.as_deref()
    }
}

/// An engine with its linker and epoch ticker.
struct Engines {
    engine: Engine,
    linker: Arc<Linker<StoreData>>,
    ticker: Arc<ticker::Ticker>,
}

impl Engines {
    fn new(options: &RuntimeOptions, metered: bool) -> Result<Self, RuntimeError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.consume_fuel(metered);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        if std::env::var_os("WEIR_PERFMAP").is_some() {
            // Name JIT code for `perf` (writes /tmp/perf-<pid>.map).
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(|e| RuntimeError(format!("{e:#}")))?;
        let mut linker = Linker::<StoreData>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| RuntimeError(format!("linking WASI: {e:#}")))?;
        FullTransformer::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(|e| RuntimeError(format!("linking weir imports: {e:#}")))?;
        let ticker = Arc::new(ticker::Ticker::start(engine.clone(), options.epoch_tick));
        Ok(Engines {
            engine,
            linker: Arc::new(linker),
            ticker,
        })
    }
}

impl Runtime {
    pub fn new(options: RuntimeOptions) -> Result<Self, RuntimeError> {
        Ok(Runtime {
            plain: Engines::new(&options, false)?,
            metered: std::sync::OnceLock::new(),
            options,
            loaded: Default::default(),
        })
    }

    /// The epoch tick: the granularity of CPU deadlines and CPU shares.
    pub fn epoch_tick(&self) -> Duration {
        self.options.epoch_tick
    }

    /// As [`Runtime::load`], compiled with fuel metering, for pipelines
    /// with a `fuel` limit (deterministic CPU budgets).
    pub fn load_metered(
        &self,
        path: &Path,
        grants: &[String],
    ) -> Result<TransformComponent, LoadError> {
        let engines = self
            .metered
            .get_or_init(|| Engines::new(&self.options, true).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| LoadError::Invalid {
                path: path.into(),
                message: message.clone(),
            })?;
        let bytes = std::fs::read(path).map_err(|err| LoadError::Read {
            path: path.into(),
            err,
        })?;
        self.load_on(engines, path, &bytes, grants, true)
    }

    /// Load, validate and (via the cache) compile a transform component.
    /// `grants` lists interfaces the pipeline allows beyond the defaults.
    /// While a component loaded from these bytes and path is in use, a load
    /// shares its compiled code instead of loading another copy.
    pub fn load(&self, path: &Path, grants: &[String]) -> Result<TransformComponent, LoadError> {
        let bytes = std::fs::read(path).map_err(|err| LoadError::Read {
            path: path.into(),
            err,
        })?;
        self.load_bytes(path, &bytes, grants)
    }

    /// As [`Runtime::load`], for bytes already in memory; `path` names them in errors.
    pub fn load_bytes(
        &self,
        path: &Path,
        bytes: &[u8],
        grants: &[String],
    ) -> Result<TransformComponent, LoadError> {
        self.load_on(&self.plain, path, bytes, grants, false)
    }

    fn load_on(
        &self,
        engines: &Engines,
        path: &Path,
        bytes: &[u8],
        grants: &[String],
        metered: bool,
    ) -> Result<TransformComponent, LoadError> {
        inspect::check_header(path, bytes)?;
        let sha256 = sha256_hex(bytes);
        let key = Loaded {
            sha256: sha256.clone(),
            path: path.to_path_buf(),
            metered,
        };
        if let Some(inner) = self.in_use(&key) {
            inspect::check_interfaces(path, &inner.info.interfaces, grants)?;
            return Ok(TransformComponent {
                inner,
                sandbox: Arc::default(),
                tenant: None,
                abort: None,
            });
        }
        let (component, cache, compile_time) = cache::load_or_compile(
            &engines.engine,
            bytes,
            &sha256,
            self.options.cache_dir.as_deref(),
        )
        .map_err(|e| LoadError::Invalid {
            path: path.into(),
            message: one_line(&e),
        })?;
        let interfaces = inspect::interfaces(&engines.engine, &component);
        inspect::check_interfaces(path, &interfaces, grants)?;
        let pre = engines
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Link {
                path: path.into(),
                message: one_line(&e),
            })?;
        let indices = GuestIndices::new(&pre).map_err(|e| LoadError::WrongExports {
            path: path.into(),
            message: one_line(&e),
        })?;
        let stateful = interfaces
            .imports
            .iter()
            .any(|i| STATEFUL_IMPORTS.contains(&inspect::unversioned(i)));
        let timer_indices = if interfaces.exports.iter().any(|e| e == TIMER_INTERFACE) {
            Some(
                TimerIndices::new(&pre).map_err(|e| LoadError::WrongExports {
                    path: path.into(),
                    message: one_line(&e),
                })?,
            )
        } else {
            None
        };
        let record_indices = if interfaces.exports.iter().any(|e| e == RECORD_INTERFACE) {
            Some(
                RecordIndices::new(&pre).map_err(|e| LoadError::WrongExports {
                    path: path.into(),
                    message: one_line(&e),
                })?,
            )
        } else {
            None
        };
        let inner = Arc::new(ComponentInner {
            pre,
            indices,
            timer_indices,
            record_indices,
            engine: engines.engine.clone(),
            ticker: engines.ticker.clone(),
            metered,
            epoch_tick: self.options.epoch_tick,
            info: ComponentInfo {
                path: path.into(),
                sha256,
                size: bytes.len(),
                interfaces,
                cache,
                load_time: compile_time,
                min_memory: inspect::declared_min_memory(bytes),
                stateful,
            },
        });
        self.keep(key, &inner);
        Ok(TransformComponent {
            inner,
            sandbox: Arc::default(),
            tenant: None,
            abort: None,
        })
    }

    /// The component loaded from `key` if a pipeline still uses it.
    fn in_use(&self, key: &Loaded) -> Option<Arc<ComponentInner>> {
        let loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded.get(key).and_then(std::sync::Weak::upgrade)
    }

    /// Share `inner` with later loads of `key` while it is in use.
    fn keep(&self, key: Loaded, inner: &Arc<ComponentInner>) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded.retain(|_, c| c.strong_count() > 0);
        loaded.insert(key, Arc::downgrade(inner));
    }
}

/// Render a wasmtime error chain on one line.
pub(crate) fn one_line(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
