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
mod process;
mod rows;

use std::time::Duration;

use crate::state::{self, OutputMode};
use crate::{Record, RecordError};
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
    /// Join on the keys the host routed the records by
    /// ([`Join::on_state_keys`]) instead of `keys`.
    state_keys: bool,
    output: OutputFn,
    checked: bool,
    buf: Vec<u8>,
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
            state_keys: false,
            output: Box::new(default_output),
            checked: false,
            buf: Vec::new(),
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

    /// Join on the key the host routed each record by, its source's
    /// `key-field` (or record key): the state key a join must use anyway,
    /// read from the host ([`state::state_keys`]) rather than from each
    /// record again. A row's key is as the host reads it: a string's
    /// characters, a number's JSON text.
    pub fn on_state_keys(mut self) -> Self {
        self.state_keys = true;
        self
    }

    /// The current call's state keys, `n` of them, for a join on them.
    fn call_keys(&self, n: usize) -> Result<Option<state::StateKeys>, String> {
        if !self.state_keys {
            return Ok(None);
        }
        match state::state_keys() {
            Some(k) if k.len() == n => Ok(Some(k)),
            Some(k) => Err(format!(
                "the host passed {} state keys for {n} records",
                k.len()
            )),
            None => Err("Join::on_state_keys: the host passed no state keys for this call".into()),
        }
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
}

#[cfg(test)]
mod tests;
