//! A loaded component: compiled once, validated, and shared by every
//! instance a pipeline's tasks make of it, with the capabilities, tenant
//! and abort switch its instances get.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::Engine;
use wasmtime::component::InstancePre;

use crate::bindings::{GuestIndices, RecordIndices, TimerIndices};
use crate::store_data::StoreData;
use crate::{Abort, CacheOutcome, Interfaces, Limits, LoadError, Sandbox, tenant, ticker};

/// Facts about a loaded component, for `weir validate` and dead letters.
#[derive(Debug, Clone)]
pub struct ComponentInfo {
    pub path: PathBuf,
    pub sha256: String,
    pub size: usize,
    pub interfaces: Interfaces,
    pub cache: CacheOutcome,
    /// Time to compile or to load from the cache.
    pub load_time: Duration,
    /// Bytes of linear memory an instance needs before it runs (the
    /// largest declared initial memory).
    pub min_memory: u64,
    /// It imports keyed state, timers or the batch context.
    pub stateful: bool,
}

/// A validated, compiled component, cheap to clone and share across
/// partition tasks.
#[derive(Clone)]
pub struct TransformComponent {
    pub(crate) inner: Arc<ComponentInner>,
    pub(crate) sandbox: Arc<Sandbox>,
    pub(crate) tenant: Option<Arc<tenant::Tenant>>,
    pub(crate) abort: Option<Abort>,
}

pub(crate) struct ComponentInner {
    pub(crate) pre: InstancePre<StoreData>,
    pub(crate) indices: GuestIndices,
    /// Present when the component exports `timer-handler`.
    pub(crate) timer_indices: Option<TimerIndices>,
    /// Present when the component exports `record-transform`.
    pub(crate) record_indices: Option<RecordIndices>,
    pub(crate) engine: Engine,
    /// Keeps deadlines enforced for as long as any instance may run, even
    /// after the `Runtime` that loaded the component is dropped; each guest
    /// call marks itself busy on it.
    pub(crate) ticker: Arc<ticker::Ticker>,
    pub(crate) epoch_tick: Duration,
    /// Compiled with fuel metering (see [`Runtime::load_metered`]).
    pub(crate) metered: bool,
    pub(crate) info: ComponentInfo,
}

impl TransformComponent {
    pub fn info(&self) -> &ComponentInfo {
        &self.inner.info
    }

    /// Whether `other` runs the same compiled copy (loads of one component
    /// while it is in use share it; see `Runtime::load`).
    pub fn shares_compiled_code(&self, other: &TransformComponent) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Refuse limits the component cannot run within, before any instance
    /// is made (a memory limit below what it declares it needs).
    pub fn check_limits(&self, limits: &Limits) -> Result<(), LoadError> {
        let info = &self.inner.info;
        if limits.fuel.is_some() && !self.inner.metered {
            return Err(LoadError::Invalid {
                path: info.path.clone(),
                message: "a fuel limit needs the component loaded with fuel metering (Runtime::load_metered)".into(),
            });
        }
        if info.min_memory > limits.max_memory as u64 {
            return Err(LoadError::MemoryTooLarge {
                path: info.path.clone(),
                declared: info.min_memory,
                limit: limits.max_memory,
            });
        }
        Ok(())
    }

    /// The same component with these capabilities granted to its instances.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Arc::new(sandbox);
        self
    }

    pub(crate) fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The same component, its instances charged to `tenant` (memory quota,
    /// CPU share).
    pub fn for_tenant(mut self, tenant: Arc<tenant::Tenant>) -> Self {
        self.tenant = Some(tenant);
        self
    }

    /// The same component, its guests stopped mid-call when `abort` is
    /// raised.
    pub fn with_abort(mut self, abort: Abort) -> Self {
        self.abort = Some(abort);
        self
    }

    /// The epoch tick of the runtime that loaded it (the CPU time slice).
    pub fn epoch_tick(&self) -> Duration {
        self.inner.epoch_tick
    }
}
