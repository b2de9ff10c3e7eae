//! A join as a whole transform: [`JoinedTransform`] says how to build it
//! from the config, [`Joins`] is the transform to export.

use std::marker::PhantomData;

use super::Join;
use crate::state::Timer;
use crate::{Batch, BatchOutput, Config, Output, Record, RecordError};

/// A transform that is one join: say how to build it from the config, and
/// export `Joins<Self>`:
///
/// ```no_run
/// # use std::time::Duration;
/// # use weir_guest::Config;
/// # use weir_guest::join::{Join, JoinedTransform};
/// struct OrdersPayments;
/// impl JoinedTransform for OrdersPayments {
///     fn build(_: &Config) -> Result<Join, String> {
///         Ok(Join::inner("orders", "payments").within(Duration::ZERO, Duration::from_secs(60)))
///     }
/// }
/// weir_guest::export!(weir_guest::join::Joins<OrdersPayments>);
/// ```
pub trait JoinedTransform: Sized + 'static {
    fn build(config: &Config) -> Result<Join, String>;
}

/// The [`crate::Transform`] of a [`JoinedTransform`].
pub struct Joins<J: JoinedTransform>(Join, PhantomData<J>);

impl<J: JoinedTransform> crate::Transform for Joins<J> {
    fn init(config: &Config) -> Result<Self, String> {
        J::build(config).map(|j| Joins(j, PhantomData))
    }

    fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        self.0.process(record, out)
    }

    fn process_batch(&mut self, batch: &Batch<'_>, out: &mut BatchOutput) -> Result<(), String> {
        self.0.process_batch(batch, out)
    }

    fn on_timer(&mut self, timer: &Timer<'_>, out: &mut Output<'_, '_>) -> Result<(), String> {
        if self.0.on_timer(timer, out) {
            Ok(())
        } else {
            Err(format!("unexpected timer at {}", timer.time))
        }
    }
}
