//! One state partition in memory: the user's keyed values and the timers,
//! in one ordered map so both are versioned and checkpointed together.
//!
//! Keys are namespaced by their first byte (user state, event-time timers,
//! processing-time timers). Timer keys put the time first, big-endian with the
//! sign bit flipped, so "every timer due by T" is one ordered range scan.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::ops::Bound;

use super::map::{Map, StateBackend};

const USER: u8 = 0;
const EVENT_TIMERS: u8 = 1;
const PROCESSING_TIMERS: u8 = 2;

/// Rough per-entry overhead of the ordered map and the key/value vectors,
/// counted in `memoryUsedBytes` so many tiny entries are not reported as free.
const ENTRY_OVERHEAD: usize = 64;

/// Which clock a timer follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeDomain {
    EventTime,
    ProcessingTime,
}

impl TimeDomain {
    fn namespace(self) -> u8 {
        match self {
            TimeDomain::EventTime => EVENT_TIMERS,
            TimeDomain::ProcessingTime => PROCESSING_TIMERS,
        }
    }
}

/// A fired timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timer {
    pub domain: TimeDomain,
    pub time: i64,
    pub key: Vec<u8>,
}

fn time_bytes(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

fn timer_key(domain: TimeDomain, time: i64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + key.len());
    k.push(domain.namespace());
    k.extend_from_slice(&time_bytes(time));
    k.extend_from_slice(key);
    k
}

/// User entries without their namespace byte.
fn strip(entries: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    entries
        .into_iter()
        .map(|(mut k, v)| {
            k.remove(0);
            (k, v)
        })
        .collect()
}

fn user_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len());
    k.push(USER);
    k.extend_from_slice(key);
    k
}

/// A key and the value it had before a change (`None`: absent).
type Undo = (Vec<u8>, Option<Vec<u8>>);

/// The in-memory state of one (operator, partition).
#[derive(Debug, Default)]
pub struct KeyedState {
    map: Map,
    /// Keys changed since the last checkpointed version (the next delta).
    dirty: BTreeSet<Vec<u8>>,
    /// Old values of keys changed by the current guarded call, newest last,
    /// so a call that traps can be undone.
    journal: Option<Vec<Undo>>,
    user_rows: u64,
    bytes: usize,
}

impl KeyedState {
    /// Empty state on `backend`.
    pub fn new(backend: StateBackend) -> Result<KeyedState, String> {
        Ok(KeyedState {
            map: Map::new(backend)?,
            ..KeyedState::default()
        })
    }

    /// The first error of a disk-backed map (the call that hit it fails).
    pub fn error(&self) -> Option<String> {
        self.map.error()
    }

    /// Set or remove a raw (namespaced) key, keeping the counters, the
    /// dirty set and the journal in step.
    fn set(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        let user = (key.first() == Some(&USER)) as u64;
        let size = key.len() + ENTRY_OVERHEAD;
        // Whether the key exists afterwards follows from the operation; no
        // second lookup (which costs a B-tree read on the disk backend).
        let (old, present) = match value {
            Some(v) => {
                self.bytes += v.len();
                (self.map.insert(key.clone(), v), true)
            }
            None => (self.map.remove(&key), false),
        };
        match (&old, present) {
            // Removing an absent key changes nothing.
            (None, false) => return,
            (None, true) => {
                self.bytes += size;
                self.user_rows += user;
            }
            (Some(o), true) => self.bytes -= o.len(),
            (Some(o), false) => {
                self.bytes -= o.len() + size;
                self.user_rows -= user;
            }
        }
        if let Some(j) = &mut self.journal {
            j.push((key.clone(), old));
        }
        self.dirty.insert(key);
    }

    pub fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        self.map.get(&user_key(key))
    }

    pub fn put(&mut self, key: &[u8], value: Vec<u8>) {
        self.set(user_key(key), Some(value));
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.set(user_key(key), None);
    }

    /// Up to `limit` user entries with `start <= key < end`.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let lo = user_key(start);
        let hi = match end {
            Some(e) => user_key(e),
            None => vec![USER + 1],
        };
        strip(
            self.map
                .scan(Bound::Included(&lo), |k| k < hi.as_slice(), limit),
        )
    }

    /// Up to `limit` user entries starting with `prefix`, after `after`.
    pub fn scan_prefix(
        &self,
        prefix: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let (lo, exclusive) = match after {
            Some(a) if a >= prefix => (user_key(a), true),
            _ => (user_key(prefix), false),
        };
        let lo = if exclusive {
            Bound::Excluded(lo.as_slice())
        } else {
            Bound::Included(lo.as_slice())
        };
        let keep = |k: &[u8]| k.first() == Some(&USER) && k[1..].starts_with(prefix);
        strip(self.map.scan(lo, keep, limit))
    }

    pub fn register_timer(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        let k = timer_key(domain, at, key);
        if !self.map.contains(&k) {
            self.set(k, Some(Vec::new()));
        }
    }

    pub fn delete_timer(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        self.set(timer_key(domain, at, key), None);
    }

    /// Remove and return the timers of `domain` due at `upto` (inclusive),
    /// ordered by time, then key.
    pub fn take_due(&mut self, domain: TimeDomain, upto: i64) -> Vec<Timer> {
        let ns = domain.namespace();
        let mut hi = vec![ns];
        hi.extend_from_slice(&time_bytes(upto));
        let due: Vec<Vec<u8>> = self
            .map
            .scan(
                Bound::Included(&[ns][..]),
                |k| k[0] == ns && k[1..9] <= hi[1..9],
                usize::MAX,
            )
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let mut out = Vec::with_capacity(due.len());
        for k in due {
            let t = u64::from_be_bytes(k[1..9].try_into().expect("8 bytes")) ^ (1 << 63);
            out.push(Timer {
                domain,
                time: t as i64,
                key: k[9..].to_vec(),
            });
            self.set(k, None);
        }
        out
    }

    /// Start recording undo information for one guarded call.
    pub fn begin_call(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Keep the current call's changes.
    pub fn end_call(&mut self) {
        self.journal = None;
    }

    /// Undo every change since [`KeyedState::begin_call`].
    pub fn rollback_call(&mut self) {
        let Some(journal) = self.journal.take() else {
            return;
        };
        for (key, old) in journal.into_iter().rev() {
            self.set(key, old);
        }
    }

    /// User entries (timers excluded).
    pub fn rows(&self) -> u64 {
        self.user_rows
    }

    /// User entries changed since the last checkpointed version.
    pub fn rows_updated(&self) -> u64 {
        self.dirty.iter().filter(|k| k[0] == USER).count() as u64
    }

    /// Estimated bytes held: keys, values and per-entry overhead.
    pub fn memory_bytes(&self) -> usize {
        self.bytes
    }

    /// Call `f` with each change since the last version, as (raw key, new
    /// value or deletion), in key order, and forget them. The values are
    /// read in place: a delta is encoded without copying the state.
    pub(crate) fn drain_delta(&mut self, mut f: impl FnMut(&[u8], Option<&[u8]>)) {
        let dirty = std::mem::take(&mut self.dirty);
        for k in &dirty {
            f(k, self.map.get(k).as_deref());
        }
    }

    /// Call `f` with every raw (namespaced) entry, in key order.
    pub(crate) fn for_each_raw(&self, f: impl FnMut(&[u8], &[u8])) {
        self.map.for_each(f)
    }

    /// The version was checkpointed (see [`Map::checkpointed`]).
    pub(crate) fn checkpointed(&mut self, durable: bool) {
        self.map.checkpointed(durable)
    }

    /// Apply a loaded entry without marking it dirty.
    pub(crate) fn apply(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        self.set(key, value);
        self.dirty.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_scans_and_counters() {
        let mut s = KeyedState::default();
        s.put(b"a1", b"x".to_vec());
        s.put(b"a2", b"y".to_vec());
        s.put(b"b1", b"z".to_vec());
        s.put(b"a1", b"xx".to_vec());
        assert_eq!(s.get(b"a1").as_deref(), Some(&b"xx"[..]));
        assert_eq!(s.rows(), 3);
        let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            keys(s.scan_prefix(b"a", None, 10)),
            vec![b"a1".to_vec(), b"a2".to_vec()]
        );
        assert_eq!(
            keys(s.scan_prefix(b"a", Some(b"a1"), 10)),
            vec![b"a2".to_vec()]
        );
        assert_eq!(
            keys(s.scan(b"a2", Some(b"b2"), 10)),
            vec![b"a2".to_vec(), b"b1".to_vec()]
        );
        assert_eq!(keys(s.scan(b"", None, 2)).len(), 2);
        s.register_timer(TimeDomain::EventTime, b"k", 5);
        // Timers never show up in user scans or counts.
        assert_eq!(keys(s.scan(b"", None, 10)).len(), 3);
        assert_eq!(s.rows(), 3);
        s.delete(b"a2");
        s.delete(b"nope");
        assert_eq!(s.rows(), 2);
        let before = s.memory_bytes();
        s.delete(b"a1");
        assert!(s.memory_bytes() < before);
    }

    #[test]
    fn timers_fire_in_time_order_including_negative_times() {
        let mut s = KeyedState::default();
        s.register_timer(TimeDomain::EventTime, b"b", 10);
        s.register_timer(TimeDomain::EventTime, b"a", 10);
        s.register_timer(TimeDomain::EventTime, b"c", -3);
        s.register_timer(TimeDomain::EventTime, b"d", 11);
        s.register_timer(TimeDomain::ProcessingTime, b"p", 1);
        s.delete_timer(TimeDomain::EventTime, b"d", 11);
        let due = s.take_due(TimeDomain::EventTime, 10);
        let got: Vec<_> = due.iter().map(|t| (t.time, t.key.clone())).collect();
        assert_eq!(
            got,
            vec![
                (-3, b"c".to_vec()),
                (10, b"a".to_vec()),
                (10, b"b".to_vec())
            ]
        );
        assert!(s.take_due(TimeDomain::EventTime, 100).is_empty());
        assert_eq!(s.take_due(TimeDomain::ProcessingTime, 1).len(), 1);
    }

    #[test]
    fn a_failed_call_is_rolled_back() {
        let mut s = KeyedState::default();
        s.put(b"k", b"1".to_vec());
        s.drain_delta(|_, _| {});
        s.begin_call();
        s.put(b"k", b"2".to_vec());
        s.put(b"n", b"3".to_vec());
        s.delete(b"k");
        s.register_timer(TimeDomain::EventTime, b"t", 1);
        s.rollback_call();
        assert_eq!(s.get(b"k").as_deref(), Some(&b"1"[..]));
        assert_eq!(s.get(b"n"), None);
        assert_eq!(s.rows(), 1);
        assert!(s.take_due(TimeDomain::EventTime, 10).is_empty());
    }
}
