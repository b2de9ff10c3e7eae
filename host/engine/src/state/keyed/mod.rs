//! One state partition: the user's keyed values and the timers, versioned
//! and checkpointed together.
//!
//! Keys are namespaced by their first byte (user state, event-time and
//! processing-time timers, event-time and processing-time expiries;
//! `timers.rs` says how a timer or expiry key is built); a checkpoint file
//! holds them in that raw form.

use std::borrow::Cow;
use std::ops::Bound;

use super::map::{Change, KeyRef, Map, MemoryMap, StateBackend, clear_for_reuse};

mod bulk;
mod timers;
pub use timers::{TimeDomain, Timer};

const USER: u8 = 0;
const EVENT_TIMERS: u8 = 1;
const PROCESSING_TIMERS: u8 = 2;
const EVENT_EXPIRIES: u8 = 3;
const PROCESSING_EXPIRIES: u8 = 4;

/// Whether a raw key's namespace is one this version writes (a checkpoint
/// file with another was written by a newer weir, or is corrupt).
pub(crate) fn known_namespace(raw: &[u8]) -> bool {
    raw.first().is_some_and(|&ns| ns <= PROCESSING_EXPIRIES)
}

/// Rough per-entry overhead of the ordered map and the key/value vectors,
/// counted in `memoryUsedBytes` so many tiny entries are not reported as free.
pub const ENTRY_OVERHEAD: usize = 64;

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

/// Most bytes of a key built on the stack for a lookup.
const STACK_KEY: usize = 128;

/// `key` in the user namespace, built in `buf` when it fits (a lookup
/// then allocates nothing).
fn user_key_in<'b>(buf: &'b mut [u8; STACK_KEY], key: &[u8]) -> Cow<'b, [u8]> {
    match buf.get_mut(..=key.len()) {
        Some(k) => {
            k[0] = USER;
            k[1..].copy_from_slice(key);
            Cow::Borrowed(k)
        }
        None => Cow::Owned(user_key(key)),
    }
}

fn user_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len());
    k.push(USER);
    k.extend_from_slice(key);
    k
}

/// A change made by the current guarded call: where its raw key ends in
/// the call's key bytes, and the value it replaced (`None`: absent).
type Undo = (usize, Option<Vec<u8>>);

/// The state of one (operator, partition).
#[derive(Debug)]
pub struct KeyedState {
    map: Map,
    /// Timers and expiries by namespace (index = namespace - 1), as raw
    /// keys, when the map is in memory: maps of their own order them by
    /// time (no search past rows sharing long prefixes) and fire them from
    /// the front. A disk map keeps them, namespaced, with the rows (`None`),
    /// so memory stays bounded.
    timers: Option<[MemoryMap; 4]>,
    /// While a guarded call runs: the version's counts of puts and
    /// removals when it began.
    call: Option<(u64, u64)>,
    /// The running call's changes, and their keys one after another (both
    /// kept empty otherwise; their buffers are reused, as a batch call
    /// makes about as many changes as the last, and a key appended to one
    /// buffer costs less than a key of its own).
    undo: Vec<Undo>,
    undo_keys: Vec<u8>,
    /// User rows put and removed since the last version (Spark counts
    /// each call).
    puts: u64,
    removals: u64,
    user_rows: u64,
    bytes: usize,
}

impl Default for KeyedState {
    fn default() -> Self {
        KeyedState {
            map: Map::default(),
            timers: Some(Default::default()),
            call: None,
            undo: Vec::new(),
            undo_keys: Vec::new(),
            puts: 0,
            removals: 0,
            user_rows: 0,
            bytes: 0,
        }
    }
}

fn timer_map(timers: &mut [MemoryMap; 4], ns: u8) -> &mut MemoryMap {
    &mut timers[usize::from(ns) - 1]
}

impl KeyedState {
    /// Empty state on `backend` (a disk map's scratch in the system's
    /// temporary directory).
    pub fn new(backend: StateBackend) -> Result<KeyedState, String> {
        Self::new_in(backend, None)
    }

    /// Empty state on `backend`, a disk map's scratch under `scratch`.
    pub fn new_in(
        backend: StateBackend,
        scratch: Option<&std::path::Path>,
    ) -> Result<KeyedState, String> {
        Ok(KeyedState {
            map: Map::new(backend, scratch)?,
            timers: (backend == StateBackend::Memory).then(Default::default),
            ..KeyedState::default()
        })
    }

    /// The first error of a disk-backed map (the call that hit it fails).
    pub fn error(&self) -> Option<String> {
        self.map.error()
    }

    /// Set or remove a raw (namespaced) key, keeping the counters (the
    /// maps track the change for the next delta). Returns the value it
    /// replaced (`Some(None)`: absent before), or `None` when nothing
    /// changed.
    fn write(&mut self, key: Cow<'_, [u8]>, value: Option<Vec<u8>>) -> Option<Option<Vec<u8>>> {
        let ns = *key.first()?;
        if ns > PROCESSING_EXPIRIES {
            return None;
        }
        let size = key.len() + ENTRY_OVERHEAD;
        let present = value.is_some();
        let old = if ns == USER {
            match value {
                Some(v) => {
                    self.bytes += v.len();
                    self.map.insert(key.into_owned(), v)
                }
                // Removing an absent key changes nothing.
                None => Some(self.map.remove(&key)?),
            }
        } else if present {
            // A timer's value is empty; registering a registered one
            // changes nothing.
            let added = match &mut self.timers {
                Some(timers) => timer_map(timers, ns).insert_new(key.into_owned()),
                None => self.map.insert_new(key.into_owned()),
            };
            added.then_some(None)?
        } else {
            Some(match &mut self.timers {
                Some(timers) => timer_map(timers, ns).remove(&key)?,
                None => self.map.remove(&key)?,
            })
        };
        self.count(ns == USER, size, old.as_deref(), present);
        Some(old)
    }

    /// Keep the byte and row counts for a raw key of `size` (with its
    /// overhead) written (`present`) or removed, `old` the value it had.
    fn count(&mut self, user: bool, size: usize, old: Option<&[u8]>, present: bool) {
        let user = u64::from(user);
        match (old, present) {
            (None, _) => {
                self.bytes += size;
                self.user_rows += user;
            }
            (Some(o), true) => self.bytes -= o.len(),
            (Some(o), false) => {
                self.bytes -= o.len() + size;
                self.user_rows -= user;
            }
        }
    }

    /// Set or remove a raw key, counting user puts and removals and
    /// recording the change for undo while a call runs.
    fn set(&mut self, key: Cow<'_, [u8]>, value: Option<Vec<u8>>) {
        let user = key.first() == Some(&USER);
        let put = value.is_some();
        let start = self.undo_keys.len();
        if self.call.is_some() {
            self.undo_keys.extend_from_slice(&key);
        }
        let changed = match self.write(key, value) {
            Some(old) if self.call.is_some() => {
                self.undo.push((self.undo_keys.len(), old));
                true
            }
            Some(_) => true,
            None => {
                self.undo_keys.truncate(start);
                false
            }
        };
        if user && changed {
            if put {
                self.puts += 1;
            } else {
                self.removals += 1;
            }
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        self.map.get(&user_key_in(&mut [0; STACK_KEY], key))
    }

    pub fn put(&mut self, key: &[u8], value: Vec<u8>) {
        self.set(Cow::Owned(user_key(key)), Some(value));
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.set(user_key_in(&mut [0; STACK_KEY], key), None);
    }

    /// Up to `limit` user entries with `start <= key < end`.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let (mut lo_buf, mut hi_buf) = ([0; STACK_KEY], [0; STACK_KEY]);
        let lo = user_key_in(&mut lo_buf, start);
        let hi = match end {
            Some(e) => user_key_in(&mut hi_buf, e),
            None => Cow::Borrowed(&[USER + 1][..]),
        };
        strip(self.map.scan(Bound::Included(&lo), |k| k < &*hi, limit))
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

    /// Start recording undo information for one guarded call.
    pub fn begin_call(&mut self) {
        self.undo.clear();
        self.undo_keys.clear();
        self.call = Some((self.puts, self.removals));
    }

    /// Keep the current call's changes.
    pub fn end_call(&mut self) {
        clear_for_reuse(&mut self.undo);
        clear_for_reuse(&mut self.undo_keys);
        self.call = None;
    }

    /// Undo every change since [`KeyedState::begin_call`].
    pub fn rollback_call(&mut self) {
        let Some((puts, removals)) = self.call.take() else {
            return;
        };
        let (mut undo, mut keys) = (
            std::mem::take(&mut self.undo),
            std::mem::take(&mut self.undo_keys),
        );
        while let Some((end, old)) = undo.pop() {
            let start = undo.last().map_or(0, |(e, _)| *e);
            self.write(Cow::Borrowed(&keys[start..end]), old);
        }
        keys.clear();
        (self.undo, self.undo_keys) = (undo, keys);
        (self.puts, self.removals) = (puts, removals);
    }

    /// User entries (timers excluded).
    pub fn rows(&self) -> u64 {
        self.user_rows
    }

    /// User rows put since the last checkpointed version.
    pub fn rows_updated(&self) -> u64 {
        self.puts
    }

    /// User rows removed since the last checkpointed version.
    pub fn rows_removed(&self) -> u64 {
        self.removals
    }

    /// Estimated bytes held: keys, values and per-entry overhead.
    pub fn memory_bytes(&self) -> usize {
        self.bytes
    }

    /// Call `f` with each change since the last version (raw keys), and
    /// forget them; applied in this order to the last version they give
    /// this one. The values are read in place: a
    /// delta is encoded without copying the state.
    pub(crate) fn drain_delta(&mut self, mut f: impl FnMut(Change<'_>)) {
        // Timers first: an expiry range removes user keys, which the user
        // map's puts may then bring back.
        for timers in self.timers.iter_mut().flatten() {
            timers.drain_changes(&mut f);
        }
        self.map.drain_changes(&mut f);
        (self.puts, self.removals) = (0, 0);
    }

    /// Call `f` with every raw (namespaced) entry, in key order.
    pub(crate) fn for_each_raw(&self, mut f: impl FnMut(&[u8], &[u8])) {
        self.map.for_each(&mut f);
        for timers in self.timers.iter().flatten() {
            timers.range(Bound::Unbounded).for_each(|(k, v)| f(k, v));
        }
    }

    /// The version was checkpointed (see [`Map::checkpointed`]).
    pub(crate) fn checkpointed(&mut self, durable: bool) {
        self.map.checkpointed(durable)
    }

    /// Apply a loaded entry: as the last version had it, so no change.
    pub(crate) fn apply(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        self.write(Cow::Owned(key), value);
    }

    /// Apply a loaded range removal ([`Change::RemoveThrough`]): remove
    /// every key of `last`'s namespace up to and including `last`.
    pub(crate) fn apply_removal_through(&mut self, last: &[u8]) {
        let Some(&ns) = last.first() else { return };
        let upto = |k: &[u8]| k[0] == ns && KeyRef::new(k) <= KeyRef::new(last);
        let expiries = ns == EVENT_EXPIRIES || ns == PROCESSING_EXPIRIES;
        if self.timers.is_some() && ns != USER {
            while let Some(timers) = &mut self.timers
                && let Some((k, _)) = timer_map(timers, ns).pop_first_if(upto)
            {
                self.bytes -= k.len() + ENTRY_OVERHEAD;
                if expiries {
                    self.write(Cow::Owned(user_key(&k[9..])), None);
                }
            }
            return;
        }
        for (k, _) in self.map.scan(Bound::Included(&[ns][..]), upto, usize::MAX) {
            if expiries {
                self.write(Cow::Owned(user_key(&k[9..])), None);
            }
            self.write(Cow::Owned(k), None);
        }
    }
}

#[cfg(test)]
mod tests;
