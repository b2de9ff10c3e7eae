//! Write weir stream transforms in Rust.
//!
//! A transform is a plain function or a [`Transform`] impl; the SDK runs the
//! per-record loop inside the guest, reads the host's columnar batches
//! without copying and writes outputs straight into the reply buffers.
//!
//! ```no_run
//! // A map: one output per input, key/headers/timestamp kept.
//! fn upper(r: &weir_guest::Record) -> Vec<u8> {
//!     r.value().to_ascii_uppercase()
//! }
//! weir_guest::map!(upper);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the result is
//! a component `weir validate` accepts. Off wasm the host imports are
//! stubbed, so `cargo test` exercises the same code natively.

mod aggregate;
#[doc(hidden)]
pub mod bindings;
pub mod codec;
mod emit;
pub mod host;
pub mod join;
#[cfg(feature = "json")]
pub mod json;
#[cfg(feature = "lookup")]
pub mod lookup;
mod record;
#[doc(hidden)]
pub mod rt;
pub mod state;
pub mod testing;
mod transform;
pub mod ttl;
pub mod window;

pub use emit::{Output, RecordBuilder};
pub use record::{Batch, HeaderIter, Headers, Position, Record};
pub use transform::{
    Config, FilterFn, FilterResult, FlatMapFn, MapFn, MapOutput, RecordError, Transform,
};
/// The generator the SDK is built on, for users who need raw bindings.
pub use wit_bindgen;

/// The raw WIT types of `weir:transform/types`.
pub mod wit {
    pub use crate::bindings::weir::transform::types::*;
}

/// Output of a whole batch, for [`Transform::process_batch`] overrides.
pub struct BatchOutput {
    pub(crate) emitter: emit::Emitter,
}

impl BatchOutput {
    /// Emit on behalf of `record` (its key, headers and timestamp are the
    /// defaults of what is emitted).
    pub fn for_record<'s, 'r>(&'s mut self, record: Record<'r>) -> Output<'s, 'r> {
        Output::new(&mut self.emitter, record)
    }

    /// Run `f` for `record`: if it reports a bad record, its partial output is
    /// rolled back and the record is listed as rejected; a broken error is
    /// returned to stop the batch.
    #[inline]
    pub fn run(
        &mut self,
        record: Record<'_>,
        f: impl FnOnce(&Record<'_>, &mut Output<'_, '_>) -> Result<(), RecordError>,
    ) -> Result<(), String> {
        let mark = self.emitter.mark();
        let mut out = Output::new(&mut self.emitter, record);
        match f(&record, &mut out) {
            Ok(()) => Ok(()),
            Err(RecordError::Bad(reason)) => {
                self.emitter.rollback(mark);
                self.emitter.reject(record.index(), reason);
                Ok(())
            }
            Err(RecordError::Broken(m)) => Err(format!(
                "record {} (partition {}, offset {}): {m}",
                record.index(),
                record.position().partition,
                record.position().offset
            )),
        }
    }

    /// Mark `record` as bad without running anything for it.
    pub fn reject(&mut self, record: &Record<'_>, reason: impl Into<String>) {
        self.emitter.reject(record.index(), reason.into());
    }
}

/// Export a [`Transform`] impl as this component's transform.
#[macro_export]
macro_rules! export {
    ($t:ty) => {
        const _: () = {
            struct __WeirGuest;
            impl $crate::bindings::exports::weir::transform::transform::Guest for __WeirGuest {
                fn init(
                    config: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
                ) -> ::std::result::Result<(), ::std::string::String> {
                    $crate::rt::init::<$t>(config)
                }
                fn process_batch(
                    input: $crate::wit::Batch,
                ) -> ::std::result::Result<$crate::wit::OutputBatch, $crate::wit::BatchError>
                {
                    $crate::rt::process_batch::<$t>(input)
                }
            }
            impl $crate::bindings::exports::weir::transform::record_transform::Guest
                for __WeirGuest
            {
                fn process_record(
                    input: $crate::wit::Record,
                ) -> ::std::result::Result<
                    ::std::vec::Vec<$crate::wit::OutputRecord>,
                    $crate::wit::RecordError,
                > {
                    $crate::rt::process_record::<$t>(input)
                }
            }
            impl $crate::bindings::exports::weir::transform::timer_handler::Guest for __WeirGuest {
                fn on_timers(
                    fired: $crate::bindings::exports::weir::transform::timer_handler::FiredTimers,
                ) -> ::std::result::Result<$crate::wit::OutputBatch, $crate::wit::BatchError>
                {
                    $crate::rt::on_timers::<$t>(fired)
                }
            }
            // Native builds (unit tests) export nothing: symbol names with
            // `:` are not valid in a native shared library's export list.
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::__export_transformer!(__WeirGuest with_types_in $crate::bindings);
            // Natively, mark the exports used so the user's code is not dead.
            #[cfg(not(target_arch = "wasm32"))]
            const _: () = {
                use $crate::bindings::exports::weir::transform::record_transform::Guest as _;
                use $crate::bindings::exports::weir::transform::timer_handler::Guest as _;
                use $crate::bindings::exports::weir::transform::transform::Guest as _;
                let _ = __WeirGuest::on_timers;
                let _ = __WeirGuest::init;
                let _ = __WeirGuest::process_batch;
                let _ = __WeirGuest::process_record;
            };
        };
    };
}

/// Export a function-style transform; shared by `map!`, `filter!`, `flat_map!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_fn {
    ($apply:ident, $f:expr) => {
        const _: () = {
            struct __WeirFn;
            impl $crate::Transform for __WeirFn {
                fn init(
                    config: &$crate::Config,
                ) -> ::std::result::Result<Self, ::std::string::String> {
                    $crate::rt::no_config(config)?;
                    Ok(__WeirFn)
                }
                #[inline]
                fn process(
                    &mut self,
                    record: &$crate::Record<'_>,
                    out: &mut $crate::Output<'_, '_>,
                ) -> ::std::result::Result<(), $crate::RecordError> {
                    $crate::rt::$apply(&$f, record, out)
                }
            }
            $crate::export!(__WeirFn);
        };
    };
}

/// Export `f: fn(&Record) -> V` (or `-> Result<V, RecordError>`) as a map:
/// one output per input with value `V`, keeping key, headers and timestamp.
/// A record without a value (a tombstone) passes through without calling `f`.
#[macro_export]
macro_rules! map {
    ($f:expr) => {
        $crate::__export_fn!(apply_map, $f);
    };
}

/// Export `f: fn(&Record) -> bool` (or `-> Result<bool, RecordError>`) as a
/// filter: records for which it returns `true` pass through unchanged.
#[macro_export]
macro_rules! filter {
    ($f:expr) => {
        $crate::__export_fn!(apply_filter, $f);
    };
}

/// Export `f: fn(&Record, &mut Output) -> Result<(), RecordError>` as a
/// flat-map: it emits zero or more records, to any named output.
#[macro_export]
macro_rules! flat_map {
    ($f:expr) => {
        $crate::__export_fn!(apply_flat_map, $f);
    };
}

#[cfg(test)]
mod tests;
