//! Glue between the generated export trait and a user's [`Transform`]; used
//! by the export macros, not by users directly.

use std::any::Any;
use std::cell::RefCell;

use crate::bindings::exports::weir::transform::timer_handler::FiredTimers as WireFired;
use crate::emit::{Emitter, Output};
use crate::record::{Batch, Headers, Position, Record};
use crate::transform::{FilterFn, FlatMapFn, MapFn};
use crate::wit::{
    Batch as WireBatch, BatchError, OutputBatch, OutputRecord, Record as WireRecord,
    RecordError as WireRecordError,
};
use crate::{BatchOutput, Config, RecordError, Transform};

thread_local! {
    /// The one transform instance of this component instance (a component
    /// instance serves exactly one task: a state partition, or a source
    /// partition of a stateless query).
    static INSTANCE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
    static SCRATCH: RefCell<Emitter> = RefCell::new(Emitter::default());
}

pub fn init<T: Transform>(config: Vec<(String, String)>) -> Result<(), String> {
    let t = T::init(&Config::new(config))?;
    INSTANCE.with(|cell| *cell.borrow_mut() = Some(Box::new(t)));
    Ok(())
}

fn with_instance<T: Transform, R>(f: impl FnOnce(&mut T) -> R) -> Result<R, String> {
    INSTANCE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let t = slot
            .as_mut()
            .and_then(|b| b.downcast_mut::<T>())
            .ok_or_else(|| "transform called before a successful init".to_string())?;
        Ok(f(t))
    })
}

/// Run `t` over one wire batch; shared by the export and the native test harness.
pub fn run_batch<T: Transform>(t: &mut T, input: &WireBatch) -> Result<OutputBatch, String> {
    run_batch_with(input, |batch, out| t.process_batch(batch, out))
}

pub(crate) fn run_batch_with(
    input: &WireBatch,
    f: impl FnOnce(&Batch<'_>, &mut BatchOutput) -> Result<(), String>,
) -> Result<OutputBatch, String> {
    let n = input.value_ends.len();
    let mut out = BatchOutput {
        emitter: Emitter::with_capacity(n, input.values.len()),
    };
    f(&Batch { wire: input }, &mut out)?;
    Ok(out.emitter.finish(&input.timestamps))
}

pub fn process_batch<T: Transform>(input: WireBatch) -> Result<OutputBatch, BatchError> {
    with_instance::<T, _>(|t| run_batch(t, &input))
        .and_then(|r| r)
        .map_err(BatchError::Broken)
}

pub fn process_record<T: Transform>(
    input: WireRecord,
) -> Result<Vec<OutputRecord>, WireRecordError> {
    let record = Record {
        index: 0,
        key: input.key.as_deref(),
        value: input.value.as_deref().unwrap_or_default(),
        has_value: input.value.is_some(),
        headers: Headers(&input.headers),
        timestamp: input.timestamp,
        position: Position {
            partition: input.position.partition,
            offset: input.position.offset,
        },
    };
    let result = SCRATCH
        .with(|cell| {
            // One emitter reused across calls: the per-record path must not pay
            // for fresh column allocations on every record.
            let mut emitter = cell.borrow_mut();
            emitter.clear();
            with_instance::<T, _>(|t| {
                let mut out = Output::new(&mut emitter, record);
                t.process(&record, &mut out)
            })
            .map(|r| r.map(|()| emitter.to_records()))
        })
        .map_err(WireRecordError::Broken)?;
    match result {
        Ok(records) => Ok(records),
        Err(RecordError::Bad(m)) => Err(WireRecordError::BadRecord(m)),
        Err(RecordError::Broken(m)) => Err(WireRecordError::Broken(m)),
    }
}

/// Fired timers in the SDK's terms (borrowed from the wire form).
pub struct Fired<'a> {
    pub keys: Vec<&'a [u8]>,
    pub times: Vec<i64>,
    pub domains: Vec<crate::state::TimeDomain>,
}

/// Run `t.on_timer` for each fired timer; output origins index the timers.
pub fn run_timers<T: Transform>(t: &mut T, fired: &Fired<'_>) -> Result<OutputBatch, String> {
    let n = fired.times.len();
    let mut emitter = Emitter::with_capacity(n, 0);
    for i in 0..n {
        let timer = crate::state::Timer {
            domain: fired.domains[i],
            key: fired.keys[i],
            time: fired.times[i],
        };
        let record = Record {
            index: i as u32,
            key: Some(fired.keys[i]),
            value: &[],
            has_value: true,
            headers: Headers(&[]),
            timestamp: fired.times[i],
            position: Position {
                partition: 0,
                offset: -1,
            },
        };
        let mut out = Output::new(&mut emitter, record);
        t.on_timer(&timer, &mut out)?;
    }
    Ok(emitter.finish(&fired.times))
}

pub fn on_timers<T: Transform>(fired: WireFired) -> Result<OutputBatch, BatchError> {
    on_timers_inner::<T>(fired).map_err(BatchError::Broken)
}

fn on_timers_inner<T: Transform>(fired: WireFired) -> Result<OutputBatch, String> {
    use crate::bindings::weir::transform::types::TimeDomain as D;
    let mut keys = Vec::with_capacity(fired.times.len());
    let mut start = 0;
    for &end in &fired.key_ends {
        keys.push(&fired.keys[start..end as usize]);
        start = end as usize;
    }
    let f = Fired {
        keys,
        times: fired.times.clone(),
        domains: fired
            .domains
            .iter()
            .map(|d| match d {
                D::EventTime => crate::state::TimeDomain::EventTime,
                D::ProcessingTime => crate::state::TimeDomain::ProcessingTime,
            })
            .collect(),
    };
    if f.keys.len() != f.times.len() || f.domains.len() != f.times.len() {
        return Err("malformed fired timers from the host".into());
    }
    with_instance::<T, _>(|t| run_timers(t, &f))?
}

/// Config check for the function-style macros, which take no config.
pub fn no_config(config: &Config) -> Result<(), String> {
    match config.pairs().first() {
        Some((k, _)) => Err(format!(
            "unknown config key `{k}`: this transform takes no config"
        )),
        None => Ok(()),
    }
}

/// A map changes values, and a record without one (a tombstone) has none:
/// it passes through unchanged, so deletes still reach compacted topics.
/// Filters and flat-maps see tombstones (`Record::has_value`).
pub fn apply_map<F: MapFn>(
    f: &F,
    record: &Record<'_>,
    out: &mut Output<'_, '_>,
) -> Result<(), RecordError> {
    if !record.has_value() {
        out.forward();
        return Ok(());
    }
    f.apply(record, out)
}

pub fn apply_filter<F: FilterFn>(
    f: &F,
    record: &Record<'_>,
    out: &mut Output<'_, '_>,
) -> Result<(), RecordError> {
    if f.keep(record)? {
        out.forward();
    }
    Ok(())
}

pub fn apply_flat_map<F: FlatMapFn>(
    f: &F,
    record: &Record<'_>,
    out: &mut Output<'_, '_>,
) -> Result<(), RecordError> {
    f.run(record, out)
}
