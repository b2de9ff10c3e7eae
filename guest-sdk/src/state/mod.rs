//! Keyed state, timers and the batch context of a stateful transform.
//!
//! State belongs to the state partition the instance serves (the host
//! routes each record there by its state key) and is
//! checkpointed by the host with every batch, so it survives crashes and
//! restarts exactly. Using any of these functions makes the component
//! stateful: the host then runs it with state and fires its timers through
//! [`crate::Transform::on_timer`].
//!
//! Off wasm the imports are served by an in-memory stand-in, so stateful
//! logic unit-tests natively (see [`crate::testing::fire_timers`]).

/// Which clock a timer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeDomain {
    /// Fires when the watermark reaches the timer's time.
    EventTime,
    /// Fires when the batch's processing time reaches it.
    ProcessingTime,
}

/// How the pipeline wants results emitted (its `output-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Each result once, when final (the watermark passed it).
    Append,
    /// Results changed by the batch, with every batch.
    Update,
    /// The whole result table with every batch.
    Complete,
}

/// Entries returned per host call by the scanning iterators.
const PAGE: u32 = 1024;

#[cfg(target_arch = "wasm32")]
mod imports;
#[cfg(target_arch = "wasm32")]
use imports as imp;
#[cfg(not(target_arch = "wasm32"))]
mod native;
#[cfg(not(target_arch = "wasm32"))]
use native as imp;

/// The value stored under `key`.
pub fn get(key: &[u8]) -> Option<Vec<u8>> {
    imp::get(key)
}

/// Store `value` under `key`.
pub fn put(key: &[u8], value: &[u8]) {
    imp::put(key, value)
}

/// Remove `key`.
pub fn delete(key: &[u8]) {
    imp::delete(key)
}

/// Store every entry with one host call (cheaper than one `put` each),
/// which reads them in place.
pub fn put_many(entries: &[(&[u8], &[u8])]) {
    if !entries.is_empty() {
        imp::put_many(entries)
    }
}

/// Up to `limit` entries with `start <= key < end` (`None`: no upper bound).
pub fn scan(start: &[u8], end: Option<&[u8]>, limit: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    imp::scan(start, end, limit)
}

/// Every entry of each range `(start, end)` (`start <= key < end`), in key
/// order, with as few host calls as the host allows: one for all the
/// ranges' first pages, while they fit its limit, then a call per further
/// page of a range that has more. The ranges are borrowed: the host reads
/// them in place, so a caller can cut them all from one buffer.
pub fn ranges(ranges: &[(&[u8], &[u8])]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::with_capacity(ranges.len());
    while out.len() < ranges.len() {
        let answers = imp::scan_many(&ranges[out.len()..], PAGE);
        if answers.is_empty() {
            // A host answers at least one range; guard the loop anyway.
            let (start, end) = ranges[out.len()];
            out.push(range(start.to_vec(), end.to_vec()).collect());
            continue;
        }
        for mut page in answers {
            let (_, end) = ranges[out.len()];
            if page.len() == PAGE as usize
                && let Some((last, _)) = page.last()
            {
                let mut from = last.clone();
                from.push(0);
                page.extend(range(from, end.to_vec()));
            }
            out.push(page);
        }
    }
    out
}

/// Entries fetched from the host a page at a time: `fetch` gets the last
/// key of the previous page (`None` first) and returns the next page; a
/// short page is the last.
fn paged(
    mut fetch: impl FnMut(Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)>,
) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
    let mut last: Option<Vec<u8>> = None;
    let mut page = Vec::new().into_iter();
    let mut done = false;
    std::iter::from_fn(move || {
        loop {
            if let Some(e) = page.next() {
                return Some(e);
            }
            if done {
                return None;
            }
            let next = fetch(last.as_deref());
            done = next.len() < PAGE as usize;
            // A short page is the last: no key to continue from.
            if !done && let Some((k, _)) = next.last() {
                last = Some(k.clone());
            }
            page = next.into_iter();
        }
    })
}

/// Every entry whose key starts with `prefix`, in key order, fetched from
/// the host a page at a time.
pub fn prefix(prefix: &[u8]) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + '_ {
    paged(move |after| imp::scan_prefix(prefix, after, PAGE))
}

/// Every entry with `start <= key < end`, in key order, fetched from the
/// host a page at a time.
pub fn range(start: Vec<u8>, end: Vec<u8>) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
    paged(move |after| match after {
        None => imp::scan(&start, Some(&end), PAGE),
        Some(last) => {
            // Just after the last key.
            let mut from = last.to_vec();
            from.push(0);
            imp::scan(&from, Some(&end), PAGE)
        }
    })
}

/// Fire [`crate::Transform::on_timer`] with `key` once `domain`'s clock reaches `at`.
pub fn register_timer(domain: TimeDomain, key: &[u8], at: i64) {
    imp::register_timer(domain, key, at)
}

/// Cancel a timer registered with the same domain, key and time.
pub fn delete_timer(domain: TimeDomain, key: &[u8], at: i64) {
    imp::delete_timer(domain, key, at)
}

/// Delete state `key` once `domain`'s clock reaches `at`, in the host and
/// without an `on_timer` call: cheaper than a timer whose handler only
/// deletes. Due expiries run after the batch's timers were handled,
/// whatever was written to the key since.
pub fn expire(domain: TimeDomain, key: &[u8], at: i64) {
    imp::expire(domain, key, at)
}

/// [`expire`] of each `(key, at)`, in one host call (which reads the keys
/// in place: they need not be copied out of the rows they name).
pub fn expire_many(domain: TimeDomain, expiries: &[(&[u8], i64)]) {
    if !expiries.is_empty() {
        imp::expire_many(domain, expiries)
    }
}

/// Withdraw an expiry registered with the same domain, key and time.
pub fn cancel_expiry(domain: TimeDomain, key: &[u8], at: i64) {
    imp::cancel_expiry(domain, key, at)
}

/// The batch's event-time watermark (ms since the Unix epoch).
pub fn watermark() -> Option<i64> {
    imp::watermark()
}

/// The batch's processing time (ms since the Unix epoch), stable across re-runs.
pub fn processing_time() -> i64 {
    imp::processing_time()
}

/// Whether the pipeline has an `[event-time]` section (event-time timers
/// can fire).
pub fn event_time() -> bool {
    imp::event_time()
}

/// The name of the source whose records the current call holds (its
/// `[[source]] name`, or `source-<index>`); `None` while timers fire. A
/// batch never mixes sources, so one call per batch is enough.
pub fn source() -> Option<String> {
    imp::source()
}

/// The state key the host routed each record of the current call by: its
/// source's `key-field` member (a string's characters, a number's or
/// boolean's JSON text) or its record key. One per record of the batch, in
/// order (one in a per-record call); `None` while timers fire. Reading the
/// keys here spares parsing every record again for them.
pub fn state_keys() -> Option<StateKeys> {
    imp::state_keys()
}

/// The state keys of a call's records ([`state_keys`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateKeys {
    keys: Vec<u8>,
    ends: Vec<u32>,
}

impl StateKeys {
    pub(crate) fn new(keys: Vec<u8>, ends: Vec<u32>) -> Self {
        StateKeys { keys, ends }
    }

    /// How many keys (one per record).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Record `i`'s key; `None` past the last (or for ends the host got
    /// wrong).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let start = match i {
            0 => 0,
            _ => *self.ends.get(i - 1)? as usize,
        };
        let end = *self.ends.get(i)? as usize;
        self.keys.get(start..end)
    }
}

/// The pipeline's output mode.
pub fn output_mode() -> OutputMode {
    imp::output_mode()
}

/// A fired timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timer<'a> {
    pub domain: TimeDomain,
    pub key: &'a [u8],
    /// The time it was registered for.
    pub time: i64,
}

#[cfg(test)]
mod tests;
