//! Joining records: each finds the other side's rows in its time range,
//! emits a pair per match, and waits in state for rows still to come.
//!
//! A batch holds one source, so none of its own rows is looked for while it
//! runs: its lookups are made a chunk of records at a time (one host call
//! for a chunk's ranges, cut from one buffer), and its rows and their
//! expiries (naming the rows' keys, not copies) are stored with one host
//! call each at its end. Host calls, not the work they do, were
//! most of a row's cost when each row made its own.

use std::ops::Range;

use super::rows::{self, Side};
use super::{Join, Joined, Row, default_output, index};
use crate::state::{self, TimeDomain, Timer};
use crate::{Batch, BatchOutput, Output, Record, RecordError};

/// Records whose lookups go to the host in one call.
const CHUNK: usize = 512;

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// What a record looks up: its join key, event time and the other side's
/// time range `[from, to]`.
struct Lookup {
    key: Vec<u8>,
    ts: i64,
    from: i64,
    to: i64,
}

/// A batch's own rows and their expiries, stored at its end: the rows'
/// keys and values one after another in `bytes` (one buffer, not two
/// allocations a row), each row's key and value spans, and each expiry's
/// row and time.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    rows: Vec<(Range<usize>, Range<usize>)>,
    expiries: Vec<(usize, i64)>,
}

impl Pending {
    /// Register the expiries and store the rows: two host calls, each
    /// reading its keys and values in place in `bytes`.
    fn store(&self) {
        let b = &self.bytes;
        let expiries: Vec<(&[u8], i64)> = (self.expiries.iter())
            .map(|&(row, at)| (&b[self.rows[row].0.clone()], at))
            .collect();
        state::expire_many(TimeDomain::EventTime, &expiries);
        let rows: Vec<(&[u8], &[u8])> = (self.rows.iter())
            .map(|(k, v)| (&b[k.clone()], &b[v.clone()]))
            .collect();
        state::put_many(&rows);
    }
}

impl Join {
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
        let keys = self.call_keys(batch.len())?;
        let mut pending = Pending {
            // Each row: its value, a flag, and a key of the join key and
            // 26 bytes (grown by doubling, the buffer was copied whole).
            bytes: Vec::with_capacity(
                (batch.wire.values.len()).saturating_add(batch.len().saturating_mul(48)),
            ),
            rows: Vec::with_capacity(batch.len()),
            expiries: Vec::with_capacity(batch.len()),
        };
        let mut bounds = Vec::new();
        let r = (|| {
            for first in (0..batch.len()).step_by(CHUNK) {
                let records: Vec<Record<'_>> = (first..batch.len().min(first + CHUNK))
                    .map(|i| batch.get(i))
                    .collect();
                let lookups: Vec<Result<Lookup, RecordError>> = (records.iter().enumerate())
                    .map(|(i, r)| {
                        self.lookup(side, r, keys.as_ref().and_then(|k| k.get(first + i)))
                    })
                    .collect();
                bounds.clear();
                let spans: Vec<_> = lookups
                    .iter()
                    .flatten()
                    .map(|l| rows::push_bounds(&mut bounds, side.other(), &l.key, l.from, l.to))
                    .collect();
                let ranges: Vec<(&[u8], &[u8])> = spans
                    .into_iter()
                    .map(|(start, end)| (&bounds[start], &bounds[end]))
                    .collect();
                let mut found = state::ranges(&ranges).into_iter();
                for (record, lookup) in records.into_iter().zip(lookups) {
                    let matches = match &lookup {
                        Ok(_) => found.next().unwrap_or_default(),
                        Err(_) => Vec::new(),
                    };
                    out.run(record, |r, o| {
                        self.join(side, r, lookup?, matches, o, f, Some(&mut pending));
                        Ok(())
                    })?;
                }
            }
            Ok(())
        })();
        pending.store();
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
        let side = self.side().map_err(RecordError::Broken)?;
        let keys = self.call_keys(1).map_err(RecordError::Broken)?;
        let l = self.lookup(side, record, keys.as_ref().and_then(|k| k.get(0)))?;
        let (start, end) = rows::bounds(side.other(), &l.key, l.from, l.to);
        let matches = state::range(start, end).collect();
        self.join(side, record, l, matches, out, f, None);
        Ok(())
    }

    pub(super) fn with_own_output<R>(
        &mut self,
        run: impl FnOnce(&mut Self, &dyn Fn(&Joined<'_>, &mut Vec<u8>)) -> R,
    ) -> R {
        let f = std::mem::replace(&mut self.output, Box::new(default_output));
        let r = run(self, &*f);
        self.output = f;
        r
    }

    /// What `r` looks up: keyed by `key` (the host's state key) when
    /// given, else by the side's key function.
    fn lookup(
        &self,
        side: Side,
        r: &Record<'_>,
        key: Option<&[u8]>,
    ) -> Result<Lookup, RecordError> {
        let key = match key {
            Some(k) => k.to_vec(),
            None => (self.keys[index(side)])(r)?,
        };
        let (before, after) = self.range.expect("checked");
        let ts = r.timestamp();
        // The other side's times this row matches: [from, to]. Rows still
        // to come are not older than the watermark, so once it passes `to`
        // none can match and the row leaves state.
        let (from, to) = match side {
            Side::Left => (ts.saturating_sub(before), ts.saturating_add(after)),
            Side::Right => (ts.saturating_sub(after), ts.saturating_add(before)),
        };
        Ok(Lookup { key, ts, from, to })
    }

    /// Emit `r` with each of its `matches` (the other side's rows in its
    /// range), then keep it in state until no row can match it: stored at
    /// once, or added to the batch's `pending` rows.
    #[allow(clippy::too_many_arguments)]
    fn join(
        &mut self,
        side: Side,
        r: &Record<'_>,
        l: Lookup,
        matches: Rows,
        out: &mut Output<'_, '_>,
        f: &dyn Fn(&Joined<'_>, &mut Vec<u8>),
        pending: Option<&mut Pending>,
    ) {
        let mark = self.kind.keeps(side.other());
        let mut matched = false;
        for (k, v) in matches {
            let Some((_, _, ots)) = rows::parse(&k) else {
                continue;
            };
            matched = true;
            let (was, value) = rows::decode(&v);
            let mine = Row {
                value: r.value(),
                timestamp: l.ts,
            };
            let theirs = Row {
                value,
                timestamp: ots,
            };
            let (left, right) = match side {
                Side::Left => (mine, theirs),
                Side::Right => (theirs, mine),
            };
            self.emit(&l.key, Some(left), Some(right), l.ts.max(ots), out, f);
            if mark && !was {
                state::put(&k, &rows::encode(true, value));
            }
        }
        let pos = r.position();
        // A row an outer join may emit alone waits for its timer; any other
        // just leaves, which the host does without calling back.
        let gone = l.to.saturating_add(1);
        let keeps = self.kind.keeps(side);
        match pending {
            Some(p) => {
                let b = &mut p.bytes;
                let own = rows::push_row_key(b, side, &l.key, l.ts, pos.partition, pos.offset);
                let value = rows::push_encoded(b, matched, r.value());
                if keeps {
                    state::register_timer(TimeDomain::EventTime, &b[own.clone()], gone);
                } else {
                    p.expiries.push((p.rows.len(), gone));
                }
                p.rows.push((own, value));
            }
            None => {
                let own = rows::row_key(side, &l.key, l.ts, pos.partition, pos.offset);
                if keeps {
                    state::register_timer(TimeDomain::EventTime, &own, gone);
                } else {
                    state::expire(TimeDomain::EventTime, &own, gone);
                }
                state::put(&own, &rows::encode(matched, r.value()));
            }
        }
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
