//! Event-time windows with user aggregate functions: tumbling, sliding and
//! session windows over a per-record key, kept in the host's checkpointed
//! state and emitted according to the pipeline's `output-mode`:
//!
//! - `append`: each window once, when the watermark passes its end (needs
//!   an `[event-time]` section), then its state is dropped;
//! - `update`: every window changed by a batch, once per batch; state is
//!   dropped when the watermark passes the window;
//! - `complete`: every window with every batch; state is never dropped.
//!
//! Output records carry the window's key, and its last millisecond
//! (`end - 1`) as timestamp.

use std::collections::BTreeMap;
use std::time::Duration;

pub use crate::aggregate::{Aggregate, Count, Window, json_string};
use crate::state::{self, OutputMode, TimeDomain, Timer};
use crate::{Batch, BatchOutput, Output, Record, RecordError};

/// A transform that is one windowed aggregation: say how to build it from
/// the config, and export `Windows<Self>`:
///
/// ```no_run
/// # use std::time::Duration;
/// # use weir_guest::Config;
/// # use weir_guest::window::{Count, Windowed, WindowedTransform};
/// struct PerKey;
/// impl WindowedTransform for PerKey {
///     type Agg = Count;
///     fn build(config: &Config) -> Result<Windowed<Count>, String> {
///         Ok(Windowed::tumbling(config.duration("size", Duration::from_secs(10))?, Count))
///     }
/// }
/// weir_guest::export!(weir_guest::window::Windows<PerKey>);
/// ```
pub trait WindowedTransform: Sized + 'static {
    type Agg: Aggregate;
    fn build(config: &crate::Config) -> Result<Windowed<Self::Agg>, String>;
}

/// The [`crate::Transform`] of a [`WindowedTransform`].
pub struct Windows<W: WindowedTransform>(Windowed<W::Agg>);

impl<W: WindowedTransform> crate::Transform for Windows<W> {
    fn init(config: &crate::Config) -> Result<Self, String> {
        W::build(config).map(Windows)
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

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Fixed windows every `slide` ms, `size` ms long (tumbling: equal).
    Fixed {
        size: i64,
        slide: i64,
    },
    Session {
        gap: i64,
    },
}

type KeyFn = Box<dyn Fn(&Record<'_>) -> Result<Vec<u8>, RecordError>>;

/// A windowed aggregation; call it from your transform's `process_batch`
/// and `on_timer`.
pub struct Windowed<A: Aggregate> {
    kind: Kind,
    agg: A,
    key_of: KeyFn,
    checked: bool,
}

pub(crate) const FIXED: u8 = b'W';
pub(crate) const SESSION: u8 = b'S';

fn ms(d: Duration) -> i64 {
    (d.as_millis() as i64).max(1)
}

impl<A: Aggregate> Windowed<A> {
    fn new(kind: Kind, agg: A) -> Self {
        Windowed {
            kind,
            agg,
            key_of: Box::new(|r| {
                r.key()
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| RecordError::bad("record has no key to window by"))
            }),
            checked: false,
        }
    }

    pub fn tumbling(size: Duration, agg: A) -> Self {
        Self::new(
            Kind::Fixed {
                size: ms(size),
                slide: ms(size),
            },
            agg,
        )
    }

    /// Windows `size` long starting every `slide`; a record is in each
    /// window that covers its event time.
    pub fn sliding(size: Duration, slide: Duration, agg: A) -> Self {
        Self::new(
            Kind::Fixed {
                size: ms(size),
                slide: ms(slide),
            },
            agg,
        )
    }

    /// A key's records closer than `gap` in event time form one session.
    pub fn session(gap: Duration, agg: A) -> Self {
        Self::new(Kind::Session { gap: ms(gap) }, agg)
    }

    /// Window by this key instead of the record key.
    pub fn key_by(
        mut self,
        f: impl Fn(&Record<'_>) -> Result<Vec<u8>, RecordError> + 'static,
    ) -> Self {
        self.key_of = Box::new(f);
        self
    }

    /// Fold a batch into the windows and emit what the output mode asks for.
    pub fn process_batch(
        &mut self,
        batch: &Batch<'_>,
        out: &mut BatchOutput,
    ) -> Result<(), String> {
        let mode = state::output_mode();
        if !self.checked {
            if mode != OutputMode::Complete && !state::event_time() {
                return Err(format!(
                    "windowed aggregation in {} mode needs an [event-time] section: windows close when the watermark passes them",
                    if mode == OutputMode::Append {
                        "append"
                    } else {
                        "update"
                    }
                ));
            }
            self.checked = true;
        }
        // State key -> index of the last record that changed it: only
        // update mode emits by it.
        let mut touched: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        let mut cache = Cache::default();
        let track = mode == OutputMode::Update;
        for record in batch.records() {
            out.run(record, |r, _| {
                self.add(r, mode, track.then_some(&mut touched), &mut cache)
            })?;
        }
        cache.flush();
        let Some(last) = batch.len().checked_sub(1) else {
            return Ok(());
        };
        match mode {
            OutputMode::Append => {}
            OutputMode::Update => {
                // Emit in record order so output origins never go back.
                let mut order: Vec<(u32, Vec<u8>)> =
                    touched.into_iter().map(|(k, i)| (i, k)).collect();
                order.sort();
                for (i, k) in order {
                    self.emit_state(&k, &mut out.for_record(batch.get(i as usize)), None);
                }
            }
            OutputMode::Complete => {
                let prefix = [self.tag()];
                for (j, (k, _)) in state::prefix(&prefix).enumerate() {
                    let r = batch.get(j.min(last));
                    self.emit_state(&k, &mut out.for_record(r), None);
                }
            }
        }
        Ok(())
    }

    /// Fold one record (the per-record call path); in update and complete
    /// modes its windows are emitted at once.
    pub fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        let mode = state::output_mode();
        let mut touched = BTreeMap::new();
        let mut cache = Cache::default();
        self.add(record, mode, Some(&mut touched), &mut cache)?;
        cache.flush();
        match mode {
            OutputMode::Append => {}
            OutputMode::Update => {
                for k in touched.keys() {
                    self.emit_state(k, out, None);
                }
            }
            OutputMode::Complete => {
                for (k, _) in state::prefix(&[self.tag()]) {
                    self.emit_state(&k, out, None);
                }
            }
        }
        Ok(())
    }

    /// Close the windows a timer belongs to; returns `false` when the timer
    /// is not one of this aggregation's.
    pub fn on_timer(&mut self, timer: &Timer<'_>, out: &mut Output<'_, '_>) -> bool {
        if timer.domain != TimeDomain::EventTime || timer.key.first() != Some(&self.tag()) {
            return false;
        }
        let emit = state::output_mode() == OutputMode::Append;
        match self.kind {
            Kind::Fixed { .. } => {
                if emit {
                    self.emit_state(timer.key, out, None);
                }
                state::delete(timer.key);
            }
            Kind::Session { .. } => {
                let wm = state::watermark().unwrap_or(timer.time);
                self.emit_state(timer.key, out, Some(wm));
            }
        }
        true
    }

    fn tag(&self) -> u8 {
        match self.kind {
            Kind::Fixed { .. } => FIXED,
            Kind::Session { .. } => SESSION,
        }
    }

    fn add(
        &self,
        r: &Record<'_>,
        mode: OutputMode,
        mut touched: Option<&mut BTreeMap<Vec<u8>, u32>>,
        cache: &mut Cache<A::Acc>,
    ) -> Result<(), RecordError> {
        let key = (self.key_of)(r)?;
        let ts = r.timestamp();
        let timers = mode != OutputMode::Complete;
        match self.kind {
            Kind::Fixed { size, slide } => {
                let mut updates = Vec::new();
                let mut start = ts - ts.rem_euclid(slide);
                while start + size > ts {
                    let skey = fixed_key(start, start + size, &key);
                    let prev = cache.get::<A>(&skey)?;
                    let new = prev.is_none();
                    let mut acc = prev.unwrap_or_else(|| self.agg.zero());
                    self.agg.add(&mut acc, r)?;
                    updates.push((skey, acc, new, start + size));
                    start -= slide;
                }
                for (skey, acc, new, end) in updates {
                    if new && timers {
                        state::register_timer(TimeDomain::EventTime, &skey, end);
                    }
                    if let Some(t) = touched.as_deref_mut() {
                        t.insert(skey.clone(), r.index());
                    }
                    cache.put(skey, acc);
                }
            }
            Kind::Session { gap } => {
                let skey = [&[SESSION][..], &key].concat();
                let mut sessions = match state::get(&skey) {
                    Some(b) => decode_sessions::<A>(&b)?,
                    None => Vec::new(),
                };
                let mut added = self.agg.zero();
                self.agg.add(&mut added, r)?;
                // Sessions the record bridges merge in start order, the
                // record's contribution last (arrival order).
                let mut merged = (ts, ts + gap, self.agg.zero());
                let mut kept = Vec::with_capacity(sessions.len());
                for s in sessions.drain(..) {
                    if s.0 <= ts + gap && ts <= s.1 {
                        if timers {
                            state::delete_timer(TimeDomain::EventTime, &skey, s.1);
                        }
                        merged.0 = merged.0.min(s.0);
                        merged.1 = merged.1.max(s.1);
                        self.agg.merge(&mut merged.2, s.2);
                    } else {
                        kept.push(s);
                    }
                }
                self.agg.merge(&mut merged.2, added);
                if timers {
                    state::register_timer(TimeDomain::EventTime, &skey, merged.1);
                }
                kept.push(merged);
                kept.sort_by_key(|s| s.0);
                state::put(&skey, &encode_sessions::<A>(&kept));
                if let Some(t) = touched {
                    t.insert(skey, r.index());
                }
            }
        }
        Ok(())
    }

    /// Emit the windows stored under `skey`. For sessions with `close_upto`,
    /// only (and all) sessions ending by then are emitted in append mode and
    /// removed from state.
    fn emit_state(&self, skey: &[u8], out: &mut Output<'_, '_>, close_upto: Option<i64>) {
        let Some(bytes) = state::get(skey) else {
            return;
        };
        let mut value = Vec::new();
        let mut emit = |key: &[u8], w: Window, acc: &A::Acc, out: &mut Output<'_, '_>| {
            value.clear();
            self.agg.result(key, w, acc, &mut value);
            out.build().key(Some(key)).timestamp(w.end - 1).emit(&value);
        };
        match self.kind {
            Kind::Fixed { .. } => {
                let Some((w, key)) = parse_fixed(skey) else {
                    return;
                };
                if let Ok(acc) = decode_acc::<A>(&bytes) {
                    emit(key, w, &acc, out);
                }
            }
            Kind::Session { .. } => {
                let key = &skey[1..];
                let Ok(sessions) = decode_sessions::<A>(&bytes) else {
                    return;
                };
                let append = state::output_mode() == OutputMode::Append;
                let mut open = Vec::new();
                for (start, end, acc) in sessions {
                    match close_upto {
                        Some(upto) if end > upto => open.push((start, end, acc)),
                        Some(_) if !append => {}
                        _ => emit(key, Window { start, end }, &acc, out),
                    }
                }
                if close_upto.is_some() {
                    if open.is_empty() {
                        state::delete(skey);
                    } else {
                        state::put(skey, &encode_sessions::<A>(&open));
                    }
                }
            }
        }
    }
}

mod storage;
use storage::{Cache, decode_acc, decode_sessions, encode_sessions, fixed_key, parse_fixed};

#[cfg(test)]
mod tests;
