//! A host `[window]`'s state charged to its tenant's memory quota, by the
//! same rule as a guest instance's keyed state: its high-water mark,
//! released when the operator instance is dropped.

use std::sync::Arc;

use weir_engine::TransformError;
use weir_engine::window::{StateBudget as Budget, StateCharge as Charge};

use super::Tenant;

/// A tenant as the host window operator charges it.
pub(super) struct StateBudget(pub(super) Arc<Tenant>);

impl Budget for StateBudget {
    fn open(&self) -> Box<dyn Charge> {
        Box::new(StateCharge {
            tenant: self.0.clone(),
            charged: 0,
        })
    }
}

/// One window operator instance's charge.
struct StateCharge {
    tenant: Arc<Tenant>,
    charged: usize,
}

impl Charge for StateCharge {
    fn grow_to(&mut self, bytes: usize) -> Result<(), TransformError> {
        let more = bytes.saturating_sub(self.charged);
        if more > 0 && !self.tenant.charge(more) {
            return Err(TransformError::TenantMemory {
                tenant: self.tenant.name.clone(),
                limit: self.tenant.max_memory,
            });
        }
        self.charged += more;
        Ok(())
    }
}

impl Drop for StateCharge {
    fn drop(&mut self) {
        self.tenant.release(self.charged);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{Scheduler, Tenant};

    #[test]
    fn a_windows_state_counts_against_its_tenants_quota_until_it_drops() {
        let s = Scheduler::new(Some(2), Duration::from_millis(1));
        let t = Tenant::new("acme", 1_000, 1, &s);
        let budget = t.state_budget();
        let mut one = budget.open();
        let mut two = budget.open();
        one.grow_to(300).unwrap();
        one.grow_to(200).unwrap(); // a high-water mark: nothing back yet
        two.grow_to(600).unwrap();
        assert_eq!(t.memory_used(), 900);
        let err = two.grow_to(800).unwrap_err();
        assert_eq!(
            err.to_string(),
            "tenant `acme` reached its guest memory quota of 1000 bytes"
        );
        assert_eq!(t.memory_used(), 900, "nothing charged for the refusal");
        drop(one);
        drop(two);
        assert_eq!(t.memory_used(), 0);
    }
}
