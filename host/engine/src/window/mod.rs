//! Windowed aggregation run by the host (a pipeline's `[window]`), for
//! every guest language alike: a guest that windows pays the component
//! boundary per batch and re-reads each record's key and event time, which
//! the exchange has already read. This operator takes both from the batch
//! (its state keys and timestamps), folds a batch into one partial
//! aggregate per window and key before touching state, and closes windows
//! with the engine's event-time timers, so its results are those of the
//! SDK's `Windowed` (the same rows as the `window_count` guest) and are
//! checkpointed, restored and exchanged like any stateful transform's.

mod acc;

use std::collections::HashMap;
use std::sync::Arc;

use acc::{Acc, Input, parse_number};

use crate::batch::RecordBatch;
use crate::exchange::key_field;
use crate::options::TransformFactory;
use crate::output::{RejectKind, Rejected, TransformOutput};
use crate::state::{FiredTimers, OutputMode, StateContext, TimeDomain};
use crate::transform::{Transform, TransformError};

/// What a window computes over its records.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregation {
    Count,
    /// Of the number at a field path (`order.total` is `["order", "total"]`).
    Sum(Vec<String>),
    Min(Vec<String>),
    Max(Vec<String>),
    Avg(Vec<String>),
}

impl Aggregation {
    /// Its name, which is also its output field.
    pub fn name(&self) -> &'static str {
        match self {
            Aggregation::Count => "count",
            Aggregation::Sum(_) => "sum",
            Aggregation::Min(_) => "min",
            Aggregation::Max(_) => "max",
            Aggregation::Avg(_) => "avg",
        }
    }

    fn field(&self) -> Option<&[String]> {
        match self {
            Aggregation::Count => None,
            Aggregation::Sum(f)
            | Aggregation::Min(f)
            | Aggregation::Max(f)
            | Aggregation::Avg(f) => Some(f),
        }
    }
}

/// Where a window's state is charged beyond its own `max-state`: a
/// tenant's memory quota, which its guests' keyed state counts against too.
pub trait StateBudget: Send + Sync {
    /// A charge for one operator instance, released when it drops.
    fn open(&self) -> Box<dyn StateCharge>;
}

/// One operator instance's charge: its state's high-water mark.
pub trait StateCharge: Send {
    /// Hold `bytes` in all (nothing changes when that is not more than
    /// before); the error when the budget cannot.
    fn grow_to(&mut self, bytes: usize) -> Result<(), TransformError>;
}

/// Fixed windows `size_ms` long starting every `slide_ms` (tumbling when
/// the two are equal), by event time, per state key.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSpec {
    pub size_ms: i64,
    pub slide_ms: i64,
    pub aggregate: Aggregation,
    /// A state partition holding more than this after a batch stops the
    /// query: keys and windows come from the data, so without a bound one
    /// pipeline could take all the host's memory.
    pub max_state_bytes: usize,
}

impl WindowSpec {
    /// What the checkpoint records in place of a component's hash: state
    /// written under one window definition means nothing under another.
    pub fn identity(&self) -> String {
        let field = self
            .aggregate
            .field()
            .map(|f| f.join("."))
            .unwrap_or_default();
        format!(
            "window:size={}ms,slide={}ms,{}({field})",
            self.size_ms,
            self.slide_ms,
            self.aggregate.name()
        )
    }

    /// One operator per state partition, each charging its state to
    /// `budget` when there is one.
    pub fn factory(self, budget: Option<Arc<dyn StateBudget>>) -> Box<dyn TransformFactory> {
        let spec = Arc::new(self);
        Box::new(
            move |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
                Ok(Box::new(WindowAggregate {
                    spec: spec.clone(),
                    partial: HashMap::new(),
                    key: Vec::new(),
                    charge: budget.as_ref().map(|b| b.open()),
                }))
            },
        )
    }
}

/// The state key of a window: its end and start (order-preserving, so a
/// scan meets windows in end order), then the record's state key.
fn window_key(start: i64, end: i64, key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&((end as u64) ^ (1 << 63)).to_be_bytes());
    out.extend_from_slice(&((start as u64) ^ (1 << 63)).to_be_bytes());
    out.extend_from_slice(key);
}

fn parse_window_key(k: &[u8]) -> Option<(i64, i64, &[u8])> {
    let time = |b: &[u8]| -> Option<i64> {
        Some((u64::from_be_bytes(b.try_into().ok()?) ^ (1 << 63)) as i64)
    };
    Some((time(k.get(8..16)?)?, time(k.get(..8)?)?, k.get(16..)?))
}

/// A batch's fold for one window: its aggregate and the last record in it.
struct Partial {
    acc: Acc,
    last: u32,
}

struct WindowAggregate {
    spec: Arc<WindowSpec>,
    /// Window key -> this batch's partial aggregate (kept for its capacity).
    partial: HashMap<Vec<u8>, Partial>,
    key: Vec<u8>,
    charge: Option<Box<dyn StateCharge>>,
}

impl WindowAggregate {
    /// `{"key":..,"start":..,"end":..,"<aggregate>":..}` keyed by the state
    /// key, at the window's last millisecond, as the SDK's windows emit.
    fn emit(&self, out: &mut TransformOutput, origin: u32, wkey: &[u8], acc: &Acc) {
        let Some((start, end, key)) = parse_window_key(wkey) else {
            return;
        };
        let mut value = Vec::with_capacity(64 + key.len());
        value.extend_from_slice(b"{\"key\":");
        let text = String::from_utf8_lossy(key);
        serde_json::to_writer(&mut value, &*text).expect("writing to a Vec cannot fail");
        value.extend_from_slice(format!(",\"start\":{start},\"end\":{end},\"").as_bytes());
        value.extend_from_slice(self.spec.aggregate.name().as_bytes());
        value.extend_from_slice(b"\":");
        acc.write_result(&self.spec.aggregate, &mut value);
        value.push(b'}');
        out.batch
            .push(origin, None, Some(key), Some(&value), &[], end - 1);
    }
}

impl Transform for WindowAggregate {
    fn process_batch(&mut self, _: &RecordBatch) -> Result<TransformOutput, TransformError> {
        Err(TransformError::Fatal(
            "a [window] aggregation runs on keyed state; the pipeline gave it none".into(),
        ))
    }

    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let WindowSpec {
            size_ms: size,
            slide_ms: slide,
            ref aggregate,
            max_state_bytes,
        } = *self.spec;
        let mut out = TransformOutput::default();
        let mut partial = std::mem::take(&mut self.partial);
        for (i, r) in input.iter().enumerate() {
            let Some(key) = r.state_key else {
                out.rejected
                    .push(bad(i, "the record has no state key".into()));
                continue;
            };
            let number = match aggregate.field() {
                None => None,
                Some(path) => match key_field::extract(r.value, path) {
                    Ok(text) => match parse_number(&text) {
                        Some(n) => Some(n),
                        None => {
                            let why = format!("field `{}` is not a number", path.join("."));
                            out.rejected.push(bad(i, why));
                            continue;
                        }
                    },
                    Err(why) => {
                        let why = why.replace("state key field", "field");
                        out.rejected.push(bad(i, why));
                        continue;
                    }
                },
            };
            fold(
                &mut partial,
                &mut self.key,
                aggregate,
                (size, slide),
                (r.timestamp, key),
                number,
                i,
            );
        }
        let timers = ctx.output_mode != OutputMode::Complete;
        let mut changed = Vec::new();
        for (wkey, p) in partial.drain() {
            let mut acc = match ctx.state.get(&wkey) {
                Some(b) => Acc::decode(&b).ok_or_else(|| corrupt(&wkey))?,
                None => {
                    if timers && let Some((_, end, _)) = parse_window_key(&wkey) {
                        ctx.state.register_timer(TimeDomain::EventTime, &wkey, end);
                    }
                    Acc::zero()
                }
            };
            acc.merge(aggregate, p.acc);
            let mut bytes = Vec::with_capacity(acc::ENCODED);
            acc.encode(&mut bytes);
            ctx.state.put(&wkey, bytes);
            if ctx.output_mode == OutputMode::Update {
                changed.push((p.last, wkey, acc));
            }
        }
        self.partial = partial;
        let held = ctx.state.memory_bytes();
        if held > max_state_bytes {
            return Err(TransformError::Fatal(format!(
                "the [window] state of this partition holds {held} bytes, over window.max-state = {max_state_bytes} (more keys and open windows than it allows: raise it, shorten the windows or the watermark delay)"
            )));
        }
        if let Some(charge) = &mut self.charge {
            charge.grow_to(held)?;
        }
        match ctx.output_mode {
            OutputMode::Append => {}
            OutputMode::Update => {
                // In record order, so output origins never go back.
                changed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
                for (last, wkey, acc) in changed {
                    self.emit(&mut out, last, &wkey, &acc);
                }
            }
            OutputMode::Complete => {
                let Some(last) = input.len().checked_sub(1) else {
                    return Ok(out);
                };
                for (j, (wkey, b)) in ctx
                    .state
                    .scan(&[], None, usize::MAX)
                    .into_iter()
                    .enumerate()
                {
                    let acc = Acc::decode(&b).ok_or_else(|| corrupt(&wkey))?;
                    self.emit(&mut out, j.min(last) as u32, &wkey, &acc);
                }
            }
        }
        Ok(out)
    }

    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let mut out = TransformOutput::default();
        for (i, (r, domain)) in fired.batch.iter().zip(&fired.domains).enumerate() {
            let wkey = r.key.unwrap_or_default();
            if *domain != TimeDomain::EventTime {
                continue;
            }
            if let Some(b) = ctx.state.get(wkey) {
                let acc = Acc::decode(&b).ok_or_else(|| corrupt(wkey))?;
                if ctx.output_mode == OutputMode::Append {
                    self.emit(&mut out, i as u32, wkey, &acc);
                }
                ctx.state.delete(wkey);
            }
        }
        Ok(out)
    }
}

/// Add record `index` (at `time`, keyed `key`) to every window covering it.
fn fold(
    partial: &mut HashMap<Vec<u8>, Partial>,
    buf: &mut Vec<u8>,
    agg: &Aggregation,
    (size, slide): (i64, i64),
    (time, key): (i64, &[u8]),
    number: Option<Input>,
    index: usize,
) {
    let mut start = time - time.rem_euclid(slide);
    while start + size > time {
        window_key(start, start + size, key, buf);
        let p = match partial.get_mut(buf.as_slice()) {
            Some(p) => p,
            None => partial.entry(buf.clone()).or_insert(Partial {
                acc: Acc::zero(),
                last: 0,
            }),
        };
        p.acc.add(agg, number);
        p.last = index as u32;
        start -= slide;
    }
}

fn bad(index: usize, reason: String) -> Rejected {
    Rejected {
        index: index as u32,
        kind: RejectKind::BadRecord,
        reason,
    }
}

fn corrupt(wkey: &[u8]) -> TransformError {
    TransformError::Fatal(format!(
        "window state entry {} does not hold an aggregate (the checkpoint was written by another operator)",
        hex::encode(wkey)
    ))
}

#[cfg(test)]
mod tests;
