//! Stream-stream joins: two sources of one pipeline joined on a key within
//! an event-time range, Spark's `left.key = right.key AND right.ts BETWEEN
//! left.ts - before AND left.ts + after`, inner or outer.
//!
//! Both sources are keyed into the same state partitions by the host (each
//! source's `key-field`), so a key's rows from both sides meet in one
//! instance. Each row waits in the host's checkpointed state until the
//! watermark proves no row of the other side can still match it (a row
//! older than the watermark is dropped before it reaches the guest), then
//! leaves it; an outer join emits its unmatched rows then. Output is
//! append-only, as in Spark: a pair is emitted once, when its second row
//! arrives. Output records carry the join key, and the later of the two
//! rows' event times (an unmatched row's own).

mod export;
mod output;
mod rows;

use std::time::Duration;

use crate::state::{self, OutputMode, TimeDomain, Timer};
use crate::{Batch, BatchOutput, Output, Record, RecordError};
pub use export::{JoinedTransform, Joins};
use output::default_output;
pub use output::{Joined, Row};
pub use rows::Side;

/// Which rows a join emits besides matched pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinType {
    /// Matched pairs only.
    Inner,
    /// Also every left row that matched nothing.
    LeftOuter,
    /// Also every right row that matched nothing.
    RightOuter,
    /// Also every row of either side that matched nothing.
    FullOuter,
}

impl JoinType {
    /// Whether unmatched rows of `side` are emitted.
    fn keeps(self, side: Side) -> bool {
        matches!(
            (self, side),
            (JoinType::FullOuter, _)
                | (JoinType::LeftOuter, Side::Left)
                | (JoinType::RightOuter, Side::Right)
        )
    }
}

type KeyFn = Box<dyn Fn(&Record<'_>) -> Result<Vec<u8>, RecordError>>;
type OutputFn = Box<dyn Fn(&Joined<'_>, &mut Vec<u8>)>;

/// A join of source `left` with source `right`; call it from your
/// transform's `process_batch` and `on_timer` (or export [`Joins`]).
pub struct Join {
    kind: JoinType,
    sources: [String; 2],
    /// `(before, after)` in ms: a right row matches a left row at `t` when
    /// its time is in `[t - before, t + after]`.
    range: Option<(i64, i64)>,
    keys: [KeyFn; 2],
    output: OutputFn,
    checked: bool,
    buf: Vec<u8>,
    /// A batch's own rows, stored with one host call at its end (`None`
    /// outside a batch call). A batch holds one source, so none of its
    /// rows is looked for while it runs.
    pending: Option<Vec<(Vec<u8>, Vec<u8>)>>,
}

fn index(side: Side) -> usize {
    match side {
        Side::Left => 0,
        Side::Right => 1,
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Join {
    /// A join of the sources named `left` and `right` (their `[[source]]
    /// name`s), on the record key until [`Join::key_by`] says otherwise,
    /// emitting `{"left":<left value>,"right":<right value>}` (`null` for
    /// a missing side; the values are assumed to be JSON) until
    /// [`Join::output`] says otherwise. [`Join::within`] is required.
    pub fn new(kind: JoinType, left: &str, right: &str) -> Self {
        let by_record_key = || -> KeyFn {
            Box::new(|r| {
                r.key()
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| RecordError::bad("record has no key to join on"))
            })
        };
        Join {
            kind,
            sources: [left.to_string(), right.to_string()],
            range: None,
            keys: [by_record_key(), by_record_key()],
            output: Box::new(default_output),
            checked: false,
            buf: Vec::new(),
            pending: None,
        }
    }

    pub fn inner(left: &str, right: &str) -> Self {
        Self::new(JoinType::Inner, left, right)
    }

    pub fn left_outer(left: &str, right: &str) -> Self {
        Self::new(JoinType::LeftOuter, left, right)
    }

    pub fn right_outer(left: &str, right: &str) -> Self {
        Self::new(JoinType::RightOuter, left, right)
    }

    pub fn full_outer(left: &str, right: &str) -> Self {
        Self::new(JoinType::FullOuter, left, right)
    }

    /// Rows match when the right row's event time is within `before`
    /// before and `after` after the left row's (both bounds included).
    pub fn within(mut self, before: Duration, after: Duration) -> Self {
        self.range = Some((ms(before), ms(after)));
        self
    }

    /// Join `side`'s records on this key instead of the record key; it
    /// must be the key the pipeline keys that source's state by.
    pub fn key_by(
        mut self,
        side: Side,
        f: impl Fn(&Record<'_>) -> Result<Vec<u8>, RecordError> + 'static,
    ) -> Self {
        self.keys[index(side)] = Box::new(f);
        self
    }

    /// Join on top-level JSON fields of the values: `left` of left rows,
    /// `right` of right rows (as the sources' `key-field`s name them).
    #[cfg(feature = "json")]
    pub fn key_fields(self, left: &str, right: &str) -> Self {
        let field = |name: String| {
            move |r: &Record<'_>| crate::json::field(r.value(), &name).map(|f| f.to_key())
        };
        self.key_by(Side::Left, field(left.to_string()))
            .key_by(Side::Right, field(right.to_string()))
    }

    /// Build each output value from a matched pair (or an unmatched row).
    pub fn output(mut self, f: impl Fn(&Joined<'_>, &mut Vec<u8>) + 'static) -> Self {
        self.output = Box::new(f);
        self
    }

    /// Which side the current call's records are on, by their source.
    fn side(&mut self) -> Result<Side, String> {
        if !self.checked {
            self.check()?;
            self.checked = true;
        }
        let source =
            state::source().ok_or("the host did not say which source this batch came from")?;
        if source == self.sources[0] {
            Ok(Side::Left)
        } else if source == self.sources[1] {
            Ok(Side::Right)
        } else {
            Err(format!(
                "a record from source `{source}`, which this join does not read: it joins `{}` with `{}` (check the [[source]] names)",
                self.sources[0], self.sources[1]
            ))
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.range.is_none() {
            return Err("a join needs its time range: Join::within(before, after)".into());
        }
        if self.sources[0] == self.sources[1] {
            return Err(format!(
                "a join reads two sources, and both sides are `{}`",
                self.sources[0]
            ));
        }
        if !state::event_time() {
            return Err("a join needs an [event-time] section: rows leave state when the watermark passes them".into());
        }
        if state::output_mode() != OutputMode::Append {
            return Err("a join emits each row once: it needs output-mode = \"append\"".into());
        }
        Ok(())
    }

    /// Join a batch (all from one source) against the other side's rows.
    pub fn process_batch(
        &mut self,
        batch: &Batch<'_>,
        out: &mut BatchOutput,
    ) -> Result<(), String> {
        self.with_own_output(|j, f| j.process_batch_with(batch, out, f))
    }

    /// As [`Join::process_batch`], with outputs built by `f` instead of the
    /// join's own output function (say, to read a lookup table the
    /// transform owns).
    pub fn process_batch_with(
        &mut self,
        batch: &Batch<'_>,
        out: &mut BatchOutput,
        f: &dyn Fn(&Joined<'_>, &mut Vec<u8>),
    ) -> Result<(), String> {
        if batch.is_empty() {
            return Ok(());
        }
        let side = self.side()?;
        self.pending = Some(Vec::with_capacity(batch.len()));
        let r = batch
            .records()
            .try_for_each(|record| out.run(record, |r, o| self.add(side, r, o, f)));
        if let Some(rows) = self.pending.take() {
            state::put_many(rows);
        }
        r
    }

    /// Join one record (the per-record call path).
    pub fn process(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), RecordError> {
        self.with_own_output(|j, f| j.process_with(record, out, f))
    }

    /// As [`Join::process`], with outputs built by `f`.
    pub fn process_with(
        &mut self,
        record: &Record<'_>,
        out: &mut Output<'_, '_>,
        f: &dyn Fn(&Joined<'_>, &mut Vec<u8>),
    ) -> Result<(), RecordError> {
        let side = self.side().map_err(RecordError::Fatal)?;
        self.add(side, record, out, f)
    }

    fn with_own_output<R>(
        &mut self,
        run: impl FnOnce(&mut Self, &dyn Fn(&Joined<'_>, &mut Vec<u8>)) -> R,
    ) -> R {
        let f = std::mem::replace(&mut self.output, Box::new(default_output));
        let r = run(self, &*f);
        self.output = f;
        r
    }

    fn add(
        &mut self,
        side: Side,
        r: &Record<'_>,
        out: &mut Output<'_, '_>,
        f: &dyn Fn(&Joined<'_>, &mut Vec<u8>),
    ) -> Result<(), RecordError> {
        let key = (self.keys[index(side)])(r)?;
        let (before, after) = self.range.expect("checked");
        let ts = r.timestamp();
        // The other side's times this row matches: [from, to]. Rows still
        // to come are not older than the watermark, so once it passes `to`
        // none can match and the row leaves state.
        let (from, to) = match side {
            Side::Left => (ts.saturating_sub(before), ts.saturating_add(after)),
            Side::Right => (ts.saturating_sub(after), ts.saturating_add(before)),
        };
        let other = side.other();
        let mark = self.kind.keeps(other);
        let mut matched = false;
        for (k, v) in rows::range(other, &key, from, to) {
            let Some((_, _, ots)) = rows::parse(&k) else {
                continue;
            };
            let (was, value) = rows::decode(&v);
            matched = true;
            let mine = Row {
                value: r.value(),
                timestamp: ts,
            };
            let theirs = Row {
                value,
                timestamp: ots,
            };
            let (left, right) = match side {
                Side::Left => (mine, theirs),
                Side::Right => (theirs, mine),
            };
            self.emit(&key, Some(left), Some(right), ts.max(ots), out, f);
            if mark && !was {
                state::put(&k, &rows::encode(true, value));
            }
        }
        let pos = r.position();
        let own = rows::row_key(side, &key, ts, pos.partition, pos.offset);
        let value = rows::encode(matched, r.value());
        // A row an outer join may emit alone waits for its timer; any other
        // just leaves, which the host does without calling back.
        let gone = to.saturating_add(1);
        if self.kind.keeps(side) {
            state::register_timer(TimeDomain::EventTime, &own, gone);
        } else {
            state::expire(TimeDomain::EventTime, &own, gone);
        }
        match &mut self.pending {
            Some(rows) => rows.push((own, value)),
            None => state::put(&own, &value),
        }
        Ok(())
    }

    fn emit(
        &mut self,
        key: &[u8],
        left: Option<Row<'_>>,
        right: Option<Row<'_>>,
        ts: i64,
        out: &mut Output<'_, '_>,
        f: &dyn Fn(&Joined<'_>, &mut Vec<u8>),
    ) {
        self.buf.clear();
        f(&Joined { key, left, right }, &mut self.buf);
        out.build().key(Some(key)).timestamp(ts).emit(&self.buf);
    }

    /// A row's time is up: drop it, emitting it first when it matched
    /// nothing and its side is kept. Returns `false` for a timer that is
    /// not this join's.
    pub fn on_timer(&mut self, timer: &Timer<'_>, out: &mut Output<'_, '_>) -> bool {
        self.with_own_output(|j, f| j.on_timer_with(timer, out, f))
    }

    /// As [`Join::on_timer`], with outputs built by `f`.
    pub fn on_timer_with(
        &mut self,
        timer: &Timer<'_>,
        out: &mut Output<'_, '_>,
        f: &dyn Fn(&Joined<'_>, &mut Vec<u8>),
    ) -> bool {
        if timer.domain != TimeDomain::EventTime || timer.key.first() != Some(&rows::TAG) {
            return false;
        }
        let Some((side, key, ts)) = rows::parse(timer.key) else {
            return false;
        };
        if self.kind.keeps(side)
            && let Some(v) = state::get(timer.key)
        {
            let (matched, value) = rows::decode(&v);
            if !matched {
                let row = Some(Row {
                    value,
                    timestamp: ts,
                });
                let (left, right) = match side {
                    Side::Left => (row, None),
                    Side::Right => (None, row),
                };
                self.emit(key, left, right, ts, out, f);
            }
        }
        state::delete(timer.key);
        true
    }
}

#[cfg(test)]
mod tests;
