//! The traits a user implements, and the adapters that turn plain functions
//! (map, filter, flat-map) into a [`Transform`].

use crate::emit::Output;
use crate::record::{Batch, Record};

/// Why a record could not be processed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// This record is bad; the pipeline's error policy decides its fate and
    /// processing goes on with the next record.
    Bad(String),
    /// The transform cannot go on; the pipeline stops. (`Broken` in every
    /// SDK: Python's and JavaScript's `weir.Broken`, Go's `weir.Broken`,
    /// C's `weir_broken`.)
    Broken(String),
}

impl RecordError {
    /// Refuse this record with `reason`.
    pub fn bad(reason: impl Into<String>) -> Self {
        RecordError::Bad(reason.into())
    }

    /// Stop the pipeline with `reason`.
    pub fn broken(reason: impl Into<String>) -> Self {
        RecordError::Broken(reason.into())
    }
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Bad(m) => write!(f, "bad record: {m}"),
            RecordError::Broken(m) => write!(f, "broken: {m}"),
        }
    }
}

impl std::error::Error for RecordError {}

/// The `[transform.config]` pairs of the pipeline, in their given order.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pairs: Vec<(String, String)>,
}

impl Config {
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Config { pairs }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or an error message naming the missing key.
    pub fn require(&self, key: &str) -> Result<&str, String> {
        self.get(key)
            .ok_or_else(|| format!("missing config key `{key}`"))
    }

    /// Refuse keys outside `known`, naming the first unknown one.
    pub fn only(&self, known: &[&str]) -> Result<(), String> {
        match self
            .pairs
            .iter()
            .find(|(k, _)| !known.contains(&k.as_str()))
        {
            Some((k, _)) => Err(format!(
                "unknown config key `{k}` (this transform accepts: {})",
                known.join(", ")
            )),
            None => Ok(()),
        }
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The duration under `key` ("250ms", "10s", "5m", "1h"), or `default`.
    pub fn duration(
        &self,
        key: &str,
        default: std::time::Duration,
    ) -> Result<std::time::Duration, String> {
        let d = self.duration_or_zero(key, default)?;
        if d.is_zero() {
            return Err(format!("config `{key}` must be longer than zero"));
        }
        Ok(d)
    }

    /// As [`Config::duration`], and "0s" is allowed (a join's range may
    /// start at the left row's own time).
    pub fn duration_or_zero(
        &self,
        key: &str,
        default: std::time::Duration,
    ) -> Result<std::time::Duration, String> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
        let (n, unit) = v.split_at(split);
        let n: u64 = n
            .parse()
            .map_err(|_| format!("config `{key}`: `{v}` is not a duration like \"10s\""))?;
        let per = match unit.trim() {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => {
                return Err(format!(
                    "config `{key}`: unknown unit in `{v}` (use ms, s, m, h or d)"
                ));
            }
        };
        let ms = n
            .checked_mul(per)
            .ok_or_else(|| format!("config `{key}`: `{v}` is too long"))?;
        Ok(std::time::Duration::from_millis(ms))
    }
}

/// A transform with state kept across records and batches of one state
/// partition (all records of a key reach the same one).
///
/// One instance exists per state partition; it is created by [`Transform::init`]
/// and reused for every batch, so expensive setup belongs in `init`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a weir transform",
    label = "weir_guest::export! needs a type implementing `weir_guest::Transform`",
    note = "implement `init(&Config) -> Result<Self, String>` and `process(&mut self, &Record, &mut Output) -> Result<(), RecordError>`"
)]
pub trait Transform: Sized + 'static {
    /// Build the instance from the pipeline's config; an `Err` refuses the
    /// config and the pipeline does not start.
    fn init(config: &Config) -> Result<Self, String>;

    /// Process one record, emitting zero or more outputs into `out`.
    fn process(&mut self, record: &Record<'_>, out: &mut Output<'_, '_>)
    -> Result<(), RecordError>;

    /// Process a whole batch. The default runs [`Transform::process`] per
    /// record; override it when whole-column work is faster. Use
    /// [`BatchOutput::for_record`] to emit on behalf of a record.
    fn process_batch(
        &mut self,
        batch: &Batch<'_>,
        out: &mut crate::BatchOutput,
    ) -> Result<(), String> {
        for record in batch.records() {
            out.run(record, |rec, o| self.process(rec, o))?;
        }
        Ok(())
    }

    /// Handle a timer registered with [`crate::state::register_timer`].
    /// `out` emits on behalf of the timer: by default a record carries the
    /// timer's key and, as timestamp, its time. An `Err` stops the pipeline
    /// (a restart retries the batch).
    fn on_timer(
        &mut self,
        timer: &crate::state::Timer<'_>,
        out: &mut Output<'_, '_>,
    ) -> Result<(), String> {
        let _ = out;
        Err(format!(
            "a timer fired at {} but this transform does not implement on_timer",
            timer.time
        ))
    }
}

/// A function usable with [`crate::map!`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used with weir_guest::map!",
    label = "expected `fn(&Record) -> V` or `fn(&Record) -> Result<V, RecordError>`",
    note = "V is the new value: Vec<u8>, String, &[u8] or &str"
)]
pub trait MapFn {
    fn apply(&self, record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError>;
}

/// A value a map function may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a record value a map function can return",
    note = "return Vec<u8>, String, &[u8], &str, or Result<one of them, RecordError>"
)]
pub trait MapOutput {
    fn emit_into(self, out: &mut Output<'_, '_>) -> Result<(), RecordError>;
}

macro_rules! bytes_map_output {
    ($($t:ty),*) => {$(
        impl MapOutput for $t {
            fn emit_into(self, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
                out.emit(self);
                Ok(())
            }
        }
    )*};
}
bytes_map_output!(Vec<u8>, String, &[u8], &str);

impl<V: MapOutput> MapOutput for Result<V, RecordError> {
    fn emit_into(self, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        self?.emit_into(out)
    }
}

impl<F, R> MapFn for F
where
    F: Fn(&Record<'_>) -> R,
    R: MapOutput,
{
    fn apply(&self, record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        self(record).emit_into(out)
    }
}

/// A function usable with [`crate::filter!`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used with weir_guest::filter!",
    label = "expected `fn(&Record) -> bool` or `fn(&Record) -> Result<bool, RecordError>`"
)]
pub trait FilterFn {
    fn keep(&self, record: &Record<'_>) -> Result<bool, RecordError>;
}

/// Implemented for `bool` and `Result<bool, RecordError>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a filter result",
    note = "a filter function returns bool (keep the record?) or Result<bool, RecordError>"
)]
pub trait FilterResult {
    fn into_keep(self) -> Result<bool, RecordError>;
}

impl FilterResult for bool {
    fn into_keep(self) -> Result<bool, RecordError> {
        Ok(self)
    }
}

impl FilterResult for Result<bool, RecordError> {
    fn into_keep(self) -> Result<bool, RecordError> {
        self
    }
}

impl<F, R> FilterFn for F
where
    F: Fn(&Record<'_>) -> R,
    R: FilterResult,
{
    fn keep(&self, record: &Record<'_>) -> Result<bool, RecordError> {
        self(record).into_keep()
    }
}

/// A function usable with [`crate::flat_map!`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used with weir_guest::flat_map!",
    label = "expected `fn(&Record, &mut Output) -> Result<(), RecordError>`"
)]
pub trait FlatMapFn {
    fn run(&self, record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError>;
}

impl<F> FlatMapFn for F
where
    F: Fn(&Record<'_>, &mut Output<'_, '_>) -> Result<(), RecordError>,
{
    fn run(&self, record: &Record<'_>, out: &mut Output<'_, '_>) -> Result<(), RecordError> {
        self(record, out)
    }
}
