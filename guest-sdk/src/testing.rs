//! Run transforms natively in unit tests, through the same batch encoding
//! the host uses, so what passes here behaves the same inside weir.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::record::span;
use crate::state::{OutputMode, TimeDomain};
use crate::wit::{Batch as WireBatch, Header, OutputBatch};
use crate::{Config, FilterFn, FlatMapFn, MapFn, Output, Record, RecordError, Transform};

#[derive(Default)]
pub(crate) struct Metrics {
    pub(crate) counters: BTreeMap<String, u64>,
    pub(crate) gauges: BTreeMap<String, f64>,
}

/// The native stand-in for the host's state, timers and context.
pub(crate) struct Native {
    pub(crate) state: BTreeMap<Vec<u8>, Vec<u8>>,
    pub(crate) timers: std::collections::BTreeSet<(TimeDomain, i64, Vec<u8>)>,
    pub(crate) expiries: std::collections::BTreeSet<(TimeDomain, i64, Vec<u8>)>,
    pub(crate) watermark: Option<i64>,
    pub(crate) processing_time: i64,
    pub(crate) output_mode: OutputMode,
    pub(crate) event_time: bool,
    pub(crate) source: Option<String>,
    pub(crate) state_keys: Option<Vec<Vec<u8>>>,
}

impl Default for Native {
    fn default() -> Self {
        Native {
            state: BTreeMap::new(),
            timers: Default::default(),
            expiries: Default::default(),
            watermark: None,
            processing_time: 0,
            output_mode: OutputMode::Append,
            event_time: true,
            source: None,
            state_keys: None,
        }
    }
}

thread_local! {
    pub(crate) static METRICS: RefCell<Metrics> = RefCell::new(Metrics::default());
    pub(crate) static NATIVE: RefCell<Native> = RefCell::new(Native::default());
}

/// Forget all native state and timers and reset the clocks.
pub fn reset_state() {
    NATIVE.with(|n| *n.borrow_mut() = Native::default());
}

/// Set the watermark later calls see, as the host would per batch.
pub fn set_watermark(watermark: Option<i64>) {
    NATIVE.with(|n| n.borrow_mut().watermark = watermark);
}

/// Set the processing time later calls see.
pub fn set_processing_time(ms: i64) {
    NATIVE.with(|n| n.borrow_mut().processing_time = ms);
}

/// Whether calls see an `[event-time]` section (default: yes).
pub fn set_event_time(enabled: bool) {
    NATIVE.with(|n| n.borrow_mut().event_time = enabled);
}

/// The source name later calls see ([`crate::state::source`]), as the host
/// sets it per batch.
pub fn set_source(name: Option<&str>) {
    NATIVE.with(|n| n.borrow_mut().source = name.map(str::to_string));
}

/// The state keys later calls see ([`crate::state::state_keys`]), as the
/// host sets them per call: one per record of the batch the test passes.
pub fn set_state_keys(keys: Option<&[&[u8]]>) {
    NATIVE
        .with(|n| n.borrow_mut().state_keys = keys.map(|k| k.iter().map(|k| k.to_vec()).collect()));
}

pub fn set_output_mode(mode: OutputMode) {
    NATIVE.with(|n| n.borrow_mut().output_mode = mode);
}

/// Number of user state entries.
pub fn state_len() -> usize {
    NATIVE.with(|n| n.borrow().state.len())
}

/// Registered timers, as (domain, time, key).
pub fn timers() -> Vec<(TimeDomain, i64, Vec<u8>)> {
    NATIVE.with(|n| n.borrow().timers.iter().cloned().collect())
}

/// Registered expiries ([`crate::state::expire`]), as (domain, time, key).
pub fn expiries() -> Vec<(TimeDomain, i64, Vec<u8>)> {
    NATIVE.with(|n| n.borrow().expiries.iter().cloned().collect())
}

type Due = std::collections::BTreeSet<(TimeDomain, i64, Vec<u8>)>;

/// Take the entries of `set` due at the current clocks.
fn take_due(n: &mut Native, set: fn(&mut Native) -> &mut Due) -> Vec<(TimeDomain, i64, Vec<u8>)> {
    let (wm, pt) = (n.watermark, n.processing_time);
    let set = set(n);
    let due: Vec<_> = set
        .iter()
        .filter(|(d, at, _)| match d {
            TimeDomain::EventTime => wm.is_some_and(|w| *at <= w),
            TimeDomain::ProcessingTime => *at <= pt,
        })
        .cloned()
        .collect();
    for d in &due {
        set.remove(d);
    }
    due
}

/// Fire the timers due at the current watermark and processing time, as
/// the host does after a batch, and decode what `t` emitted for them; then
/// delete the keys whose expiries are due, as the host does next.
pub fn fire_timers<T: Transform>(t: &mut T) -> Result<Run, String> {
    let due = NATIVE.with(|n| take_due(&mut n.borrow_mut(), |n| &mut n.timers));
    let run = run_fired(t, due)?;
    NATIVE.with(|n| {
        let mut n = n.borrow_mut();
        for (_, _, key) in take_due(&mut n, |n| &mut n.expiries) {
            n.state.remove(&key);
        }
    });
    Ok(run)
}

fn run_fired<T: Transform>(t: &mut T, due: Vec<(TimeDomain, i64, Vec<u8>)>) -> Result<Run, String> {
    let mut due = due;
    due.sort_by_key(|(_, at, _)| *at);
    let fired = crate::rt::Fired {
        keys: due.iter().map(|(_, _, k)| k.as_slice()).collect(),
        times: due.iter().map(|(_, at, _)| *at).collect(),
        domains: due.iter().map(|(d, _, _)| *d).collect(),
    };
    let out = crate::rt::run_timers(t, &fired)?;
    let mut wire = encode(&[]);
    wire.timestamps = fired.times.clone();
    Ok(decode(&wire, &out))
}

/// Current value of a counter reported through [`crate::host::counter_add`].
pub fn counter(name: &str) -> u64 {
    METRICS.with(|m| m.borrow().counters.get(name).copied().unwrap_or(0))
}

/// Current value of a gauge reported through [`crate::host::gauge_set`].
pub fn gauge(name: &str) -> Option<f64> {
    METRICS.with(|m| m.borrow().gauges.get(name).copied())
}

/// One output record, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    pub output: Option<String>,
    pub key: Option<Vec<u8>>,
    /// Empty for a record without a value (see `has_value`).
    pub value: Vec<u8>,
    /// False for a tombstone.
    pub has_value: bool,
    pub headers: Vec<(String, Vec<u8>)>,
    pub timestamp: i64,
    /// Index of the input record it came from.
    pub origin: u32,
}

impl Emitted {
    pub fn value_str(&self) -> &str {
        std::str::from_utf8(&self.value).expect("output value is not UTF-8")
    }
}

/// What one batch produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub emitted: Vec<Emitted>,
    /// `(input index, reason)` of each refused record.
    pub rejected: Vec<(u32, String)>,
}

impl Run {
    /// Output values as strings, in order.
    pub fn values(&self) -> Vec<&str> {
        self.emitted.iter().map(Emitted::value_str).collect()
    }
}

/// Build a transform from config pairs, as the host's `init` would.
pub fn init<T: Transform>(config: &[(&str, &str)]) -> Result<T, String> {
    T::init(&Config::new(
        config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    ))
}

/// Encode `records` as one batch, run it through `t`, and decode the output.
pub fn run<T: Transform>(t: &mut T, records: &[Record<'_>]) -> Result<Run, String> {
    let wire = encode(records);
    let out = crate::rt::run_batch(t, &wire)?;
    Ok(decode(&wire, &out))
}

/// Run a per-record function (the shape `flat_map!` takes) over `records`.
pub fn run_fn(
    records: &[Record<'_>],
    mut f: impl FnMut(&Record<'_>, &mut Output<'_, '_>) -> Result<(), RecordError>,
) -> Result<Run, String> {
    let wire = encode(records);
    let out = crate::rt::run_batch_with(&wire, |batch, out| {
        for r in batch.records() {
            out.run(r, &mut f)?;
        }
        Ok(())
    })?;
    Ok(decode(&wire, &out))
}

/// Records with the given values, offsets 0.., no keys or headers.
pub fn records<'a>(values: &[&'a str]) -> Vec<Record<'a>> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| Record::new(v.as_bytes()).with_position(0, i as i64))
        .collect()
}

/// Test a `map!` function on plain values.
pub fn map<F: MapFn>(f: F, values: &[&str]) -> Result<Run, String> {
    run_fn(&records(values), |r, o| crate::rt::apply_map(&f, r, o))
}

/// Test a `filter!` function on plain values.
pub fn filter<F: FilterFn>(f: F, values: &[&str]) -> Result<Run, String> {
    run_fn(&records(values), |r, o| crate::rt::apply_filter(&f, r, o))
}

/// Test a `flat_map!` function on plain values.
pub fn flat_map<F: FlatMapFn>(f: F, values: &[&str]) -> Result<Run, String> {
    run_fn(&records(values), |r, o| f.run(r, o))
}

/// Run a batch of plain values (no keys or headers, timestamps 0).
pub fn run_values<T: Transform>(t: &mut T, values: &[&str]) -> Result<Run, String> {
    run(t, &records(values))
}

fn encode(records: &[Record<'_>]) -> WireBatch {
    let mut b = WireBatch {
        partition: records.first().map_or(0, |r| r.position().partition),
        values: vec![],
        value_ends: vec![],
        has_value: vec![],
        keys: vec![],
        key_ends: vec![],
        has_key: vec![],
        headers: vec![],
        header_ends: vec![],
        timestamps: vec![],
        offsets: vec![],
    };
    for (n, r) in records.iter().enumerate() {
        weir_wire::push_optional(&mut b.has_value, n, true, r.has_value());
        b.values.extend_from_slice(r.value());
        b.value_ends.push(weir_wire::end(b.values.len()));
        weir_wire::push_key(&mut b.keys, &mut b.key_ends, &mut b.has_key, n, r.key());
        if !r.headers().is_empty() || !b.header_ends.is_empty() {
            b.header_ends.resize(n, weir_wire::end(b.headers.len()));
            b.headers
                .extend(r.headers().iter().map(|(name, value)| Header {
                    name: name.to_owned(),
                    value: value.to_vec(),
                }));
            b.header_ends.push(weir_wire::end(b.headers.len()));
        }
        b.timestamps.push(r.timestamp());
        b.offsets.push(r.position().offset);
    }
    b
}

fn decode(input: &WireBatch, out: &OutputBatch) -> Run {
    let emitted = (0..out.value_ends.len())
        .map(|i| {
            let origin = if out.origins.is_empty() {
                i as u32
            } else {
                out.origins[i]
            };
            let route = out.routes.get(i).copied().unwrap_or(0);
            let headers = if out.header_ends.is_empty() {
                vec![]
            } else {
                span(&out.headers, &out.header_ends, i)
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect()
            };
            Emitted {
                output: (route != 0).then(|| out.outputs[route as usize - 1].clone()),
                key: (!out.has_key.is_empty() && out.has_key[i])
                    .then(|| span(&out.keys, &out.key_ends, i).to_vec()),
                value: span(&out.values, &out.value_ends, i).to_vec(),
                has_value: weir_wire::optional(&out.has_value, i, true),
                headers,
                timestamp: out
                    .timestamps
                    .get(i)
                    .copied()
                    .unwrap_or_else(|| input.timestamps[origin as usize]),
                origin,
            }
        })
        .collect();
    Run {
        emitted,
        rejected: out
            .rejected
            .iter()
            .map(|b| (b.index, b.reason.clone()))
            .collect(),
    }
}
