//! Timers and expiries of a state partition: registered, deleted and fired
//! in time order. A timer's (or expiry's) raw key is its namespace, its time
//! (big-endian, sign bit flipped, so key order is firing order), then the
//! user's key. An expiry is a timer the host handles itself: it deletes the
//! user's key, with no call into the guest.

use std::borrow::Cow;
use std::ops::Bound;

use super::{
    ENTRY_OVERHEAD, EVENT_EXPIRIES, EVENT_TIMERS, KeyedState, PROCESSING_EXPIRIES,
    PROCESSING_TIMERS, STACK_KEY, timer_map, user_key, user_key_in,
};
use crate::state::FiredTimers;

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

    pub(super) fn expiry_namespace(self) -> u8 {
        match self {
            TimeDomain::EventTime => EVENT_EXPIRIES,
            TimeDomain::ProcessingTime => PROCESSING_EXPIRIES,
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

/// The first key of namespace `ns` not due at `upto`.
fn due_end(ns: u8, upto: i64) -> Vec<u8> {
    match upto.checked_add(1) {
        Some(next) => [&[ns][..], &time_bytes(next)].concat(),
        None => vec![ns + 1],
    }
}

pub(super) fn timer_key(ns: u8, time: i64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + key.len());
    k.push(ns);
    k.extend_from_slice(&time_bytes(time));
    k.extend_from_slice(key);
    k
}

impl KeyedState {
    pub fn register_timer(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        let k = timer_key(domain.namespace(), at, key);
        self.set(Cow::Owned(k), Some(Vec::new()));
    }

    pub fn delete_timer(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        self.set(Cow::Owned(timer_key(domain.namespace(), at, key)), None);
    }

    /// Delete the user's `key` once `domain`'s clock reaches `at` (see
    /// [`KeyedState::expire_due`]).
    pub fn register_expiry(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        let k = timer_key(domain.expiry_namespace(), at, key);
        self.set(Cow::Owned(k), Some(Vec::new()));
    }

    pub fn cancel_expiry(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        let k = timer_key(domain.expiry_namespace(), at, key);
        self.set(Cow::Owned(k), None);
    }

    /// Delete the user keys whose expiries of `domain` are due at `upto`
    /// (inclusive), with the expiries; returns how many expiries were due.
    pub fn expire_due(&mut self, domain: TimeDomain, upto: i64) -> u64 {
        let ns = domain.expiry_namespace();
        if let Some(timers) = &mut self.timers {
            let popped = timer_map(timers, ns).pop_below(&due_end(ns, upto));
            let n = popped.len() as u64;
            let mut buf = [0; STACK_KEY];
            for (k, old) in popped {
                self.popped(&k);
                let user = user_key_in(&mut buf, &k[9..]);
                if old && self.call.is_none() {
                    // The delta's range removal of this expiry removes the
                    // key too (see `Change::RemoveThrough`).
                    self.remove_unlisted(&user);
                } else {
                    self.set(user, None);
                }
            }
            return n;
        }
        let upto = time_bytes(upto);
        let due = |k: &[u8]| k[0] == ns && k[1..9] <= upto[..];
        let keys = self.map.scan(Bound::Included(&[ns][..]), due, usize::MAX);
        let n = keys.len() as u64;
        for (k, _) in keys {
            self.set(Cow::Owned(user_key(&k[9..])), None);
            self.set(Cow::Owned(k), None);
        }
        n
    }

    /// Remove a user key (raw) as `set` does, but leave it out of the next
    /// delta.
    fn remove_unlisted(&mut self, raw: &[u8]) {
        if let Some(old) = self.map.remove_unlisted(raw) {
            self.count(true, raw.len() + ENTRY_OVERHEAD, Some(&old), false);
            self.removals += 1;
        }
    }

    /// Account for a timer or expiry popped from its map (and undo it with
    /// the running call).
    fn popped(&mut self, k: &[u8]) {
        self.bytes -= k.len() + ENTRY_OVERHEAD;
        if self.call.is_some() {
            self.undo_keys.extend_from_slice(k);
            self.undo.push((self.undo_keys.len(), Some(Vec::new())));
        }
    }

    /// Remove and return the timers of `domain` due at `upto` (inclusive),
    /// ordered by time, then key.
    pub fn take_due(&mut self, domain: TimeDomain, upto: i64) -> Vec<Timer> {
        let mut fired = FiredTimers::default();
        self.fire_due(domain, upto, &mut fired);
        fired.timers()
    }

    /// Remove the timers of `domain` due at `upto` (inclusive) and add them
    /// to `fired`, ordered by time, then key.
    pub fn fire_due(&mut self, domain: TimeDomain, upto: i64, fired: &mut FiredTimers) {
        let ns = domain.namespace();
        let time = |k: &[u8]| {
            (u64::from_be_bytes(k[1..9].try_into().expect("8 bytes")) ^ (1 << 63)) as i64
        };
        let end = due_end(ns, upto);
        let upto = time_bytes(upto);
        let due = |k: &[u8]| k[0] == ns && k[1..9] <= upto[..];
        if let Some(timers) = &mut self.timers {
            for (k, _) in timer_map(timers, ns).pop_below(&end) {
                fired.push(domain, time(&k), &k[9..]);
                self.popped(&k);
            }
            return;
        }
        let keys = self.map.scan(Bound::Included(&[ns][..]), due, usize::MAX);
        for (k, _) in keys {
            fired.push(domain, time(&k), &k[9..]);
            self.set(Cow::Owned(k), None);
        }
    }
}
