//! A pipeline's transform as the engine takes it: a guest component
//! loaded for the pipeline (and its tenant), the host's `[window]`, or
//! records passed through; with the error policy and whether it keeps
//! state.

use std::sync::Arc;

use super::{BuildError, refused};
use crate::spec::Pipeline;
use weir_engine::state::OutputMode;
use weir_engine::{
    ErrorPolicy, FnTransform, Guarded, OutputBatch, RecordBatch, Transform, TransformError,
    TransformFactory,
};
use weir_runtime::tenant::Tenant;
use weir_runtime::{CallMode, RECORD_INTERFACE, Runtime, WasmTransform};

/// Records pass through unchanged when a pipeline has no transform.
fn identity(input: &RecordBatch, out: &mut OutputBatch) -> Result<(), TransformError> {
    out.pass_through(input);
    Ok(())
}

/// Whose guests a query runs: the tenant they are charged to (memory quota,
/// CPU share), and the switch that stops them mid-call.
#[derive(Clone, Default)]
pub struct GuestScope {
    pub tenant: Option<Arc<Tenant>>,
    pub abort: Option<weir_runtime::Abort>,
}

impl GuestScope {
    pub fn of_tenant(tenant: Arc<Tenant>) -> GuestScope {
        GuestScope {
            tenant: Some(tenant),
            abort: None,
        }
    }
}

/// The transform instances' factory (each guest behind the engine's guard),
/// the pipeline's error policy, and whether the guest keeps state.
pub(super) fn factory(
    runtime: &Runtime,
    spec: &Pipeline,
    scope: GuestScope,
) -> Result<Guest, BuildError> {
    if let Some(w) = &spec.window {
        // Its state counts against the tenant's memory quota, as a guest's does.
        let budget = scope.tenant.as_ref().map(|t| t.state_budget());
        return Ok(Guest {
            factory: w.spec.clone().factory(budget),
            policy: w.on_error.policy(w.spec.identity()),
            stateful: true,
            component: Some(w.spec.identity()),
        });
    }
    let Some(t) = spec.transform.clone() else {
        let identity = |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
            Ok(Box::new(FnTransform(identity)))
        };
        return Ok(Guest {
            factory: Box::new(identity),
            policy: ErrorPolicy::Skip,
            stateful: false,
            component: None,
        });
    };
    let mut component = if t.limits.fuel.is_some() {
        runtime.load_metered(&t.component, &t.grants)?
    } else {
        runtime.load(&t.component, &t.grants)?
    }
    .with_sandbox(t.sandbox.clone());
    weir_runtime::check_sandbox(&t.sandbox, runtime.cache_dir()).map_err(BuildError::Refused)?;
    // Guest logs carry the tenant first, so they can be routed per tenant.
    let mut name = spec.name.clone();
    if let Some(tenant) = scope.tenant {
        name = format!("{}/{name}", tenant.name());
        component = component.for_tenant(tenant);
    }
    if let Some(abort) = scope.abort {
        component = component.with_abort(abort);
    }
    component.check_limits(&t.limits)?;
    let policy = t
        .on_error
        .policy(format!("sha256:{}", component.info().sha256));
    let stateful = component.info().stateful;
    let id = format!("sha256:{}", component.info().sha256);
    match (&spec.state_key, stateful) {
        (None, true) => {
            return Err(refused(format!(
                "{} keeps keyed state, so the pipeline must say how records are keyed: [state] key = \"record-key\" or key-field = \"<json.path>\" (state is partitioned by that key)",
                t.component.display()
            )));
        }
        (Some(_), false) => {
            return Err(refused(format!(
                "[state] key / key-field and the sources' key-field partition keyed state, and {} imports no keyed state (weir:transform/state); remove them",
                t.component.display()
            )));
        }
        _ => {}
    }
    if !stateful && spec.state.output_mode != OutputMode::Append {
        return Err(refused(format!(
            "output-mode = \"{}\" needs a stateful transform, and {} imports no keyed state (weir:transform/state); stateless transforms emit in append mode",
            spec.state.output_mode.as_str(),
            t.component.display()
        )));
    }
    let per_record = component
        .info()
        .interfaces
        .exports
        .iter()
        .any(|e| e == RECORD_INTERFACE);
    if t.call == CallMode::PerRecord && !per_record {
        return Err(refused(format!(
            "call = \"record\" needs {} to export `{RECORD_INTERFACE}` (build it for the record-transformer world), or use call = \"batch\"",
            t.component.display()
        )));
    }
    let factory = move |source: usize, task: u32| -> Result<Box<dyn Transform>, TransformError> {
        let label = if stateful {
            format!("{name}/state-partition-{task}")
        } else {
            format!("{name}/source-{source}/task-{task}")
        };
        let guest = WasmTransform::new(&component, t.config.clone(), t.limits, &label, t.call)?;
        Ok(Box::new(Guarded::new(Box::new(guest), t.record_limits)))
    };
    Ok(Guest {
        factory: Box::new(factory),
        policy,
        stateful,
        component: Some(id),
    })
}

/// A pipeline's transform as the engine takes it.
pub(super) struct Guest {
    pub factory: Box<dyn TransformFactory>,
    pub policy: ErrorPolicy,
    /// The component keeps keyed state.
    pub stateful: bool,
    /// `sha256:<hex>` of the component, recorded in the checkpoint.
    pub component: Option<String>,
}
