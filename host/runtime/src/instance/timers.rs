//! Firing a stateful guest's timers: the fired timers go to the
//! `timer-handler` export with the task's state moved into the store.

use super::{WasmTransform, classify};
use crate::bindings::{WitFiredTimers, WitTimeDomain};
use weir_engine::TransformError;
use weir_engine::TransformOutput;
use weir_engine::state::{FiredTimers, StateContext, TimeDomain};

impl WasmTransform {
    pub(super) fn call_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let ticks = self.deadline_ticks();
        let limits = self.limits;
        let _running = self.running();
        let live = self.ensure_live()?;
        let Some(timers) = &live.timers else {
            return Err(TransformError::Fatal(
                "timers fired but the component does not export weir:transform/timer-handler (build it for the stateful-transformer world)".into(),
            ));
        };
        let b = &fired.batch;
        let columns = b.columns().slices();
        let wit = WitFiredTimers {
            keys: columns.keys.to_vec(),
            key_ends: columns.key_ends.to_vec(),
            times: b.timestamps().to_vec(),
            domains: fired
                .domains
                .iter()
                .map(|d| match d {
                    TimeDomain::EventTime => WitTimeDomain::EventTime,
                    TimeDomain::ProcessingTime => WitTimeDomain::ProcessingTime,
                })
                .collect(),
        };
        let data = live.store.data_mut();
        data.state_exceeded = false;
        std::mem::swap(&mut data.ctx, ctx);
        super::arm(&mut live.store, ticks, limits.fuel);
        let r = timers.call_on_timers(&mut live.store, &wit);
        let data = live.store.data_mut();
        std::mem::swap(&mut data.ctx, ctx);
        match r {
            Ok(Ok(_)) if data.state_exceeded => Err(TransformError::StateLimit {
                limit: data.max_state,
            }),
            Ok(r) => crate::convert::from_call(r, "on-timers: "),
            Err(e) => Err(classify(&e, &live.store, &limits)),
        }
    }
}
