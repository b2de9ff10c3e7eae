//! Timers of a state partition: registered, deleted and fired in time
//! order. A timer's raw key is its namespace, its time (big-endian, sign
//! bit flipped, so key order is firing order), then the user's key.

use std::borrow::Cow;
use std::ops::Bound;

use super::{ENTRY_OVERHEAD, EVENT_TIMERS, KeyedState, PROCESSING_TIMERS, timer_map};
use crate::engine::state::FiredTimers;

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

impl KeyedState {
    pub fn register_timer(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        self.set(Cow::Owned(timer_key(domain, at, key)), Some(Vec::new()));
    }

    pub fn delete_timer(&mut self, domain: TimeDomain, key: &[u8], at: i64) {
        self.set(Cow::Owned(timer_key(domain, at, key)), None);
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
        let upto = time_bytes(upto);
        let due = |k: &[u8]| k[0] == ns && k[1..9] <= upto[..];
        let time = |k: &[u8]| {
            (u64::from_be_bytes(k[1..9].try_into().expect("8 bytes")) ^ (1 << 63)) as i64
        };
        if let Some(timers) = &mut self.timers {
            let timers = timer_map(timers, ns);
            while let Some(k) = timers.pop_first_if(due) {
                fired.push(domain, time(k), &k[9..]);
                self.bytes -= k.len() + ENTRY_OVERHEAD;
                if self.call.is_some() {
                    self.undo_keys.extend_from_slice(k);
                    self.undo.push((self.undo_keys.len(), Some(Vec::new())));
                }
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
