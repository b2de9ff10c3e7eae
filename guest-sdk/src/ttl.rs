//! Keyed state whose entries expire: each entry lives `ttl` after it was
//! written, by event time (the record's timestamp, expiring as the
//! watermark passes) or by processing time. Expired entries read as absent
//! at once and are removed from state by a timer.

use std::time::Duration;

use crate::Record;
use crate::codec::Codec;
use crate::state::{self, TimeDomain, Timer};

/// A named map with a time-to-live per entry.
pub struct TtlState {
    prefix: Vec<u8>,
    ttl: i64,
    domain: TimeDomain,
}

impl TtlState {
    /// `name` keeps several TTL maps (and windows) of one transform apart.
    pub fn new(name: &str, ttl: Duration, domain: TimeDomain) -> Self {
        let mut prefix = b"T".to_vec();
        prefix.extend_from_slice(name.as_bytes());
        prefix.push(0);
        TtlState {
            prefix,
            ttl: ttl.as_millis() as i64,
            domain,
        }
    }

    /// "Now" for `record` in this map's time domain.
    pub fn now(&self, record: &Record<'_>) -> i64 {
        match self.domain {
            TimeDomain::EventTime => record.timestamp(),
            TimeDomain::ProcessingTime => state::processing_time(),
        }
    }

    fn key(&self, key: &[u8]) -> Vec<u8> {
        [&self.prefix[..], key].concat()
    }

    /// The live value under `key` at time `now`.
    pub fn get(&self, key: &[u8], now: i64) -> Option<Vec<u8>> {
        let stored = state::get(&self.key(key))?;
        let mut s = &stored[..];
        let expires = i64::decode(&mut s)?;
        (expires > now).then(|| s.to_vec())
    }

    /// Store `value` under `key`, living until `now + ttl`.
    pub fn put(&self, key: &[u8], value: &[u8], now: i64) {
        let k = self.key(key);
        if let Some(old) = state::get(&k)
            && let Some(expires) = i64::decode(&mut &old[..])
        {
            state::delete_timer(self.domain, &k, expires);
        }
        let expires = now.saturating_add(self.ttl);
        let mut v = expires.to_bytes();
        v.extend_from_slice(value);
        state::put(&k, &v);
        state::register_timer(self.domain, &k, expires);
    }

    pub fn delete(&self, key: &[u8]) {
        let k = self.key(key);
        if let Some(old) = state::get(&k)
            && let Some(expires) = i64::decode(&mut &old[..])
        {
            state::delete_timer(self.domain, &k, expires);
        }
        state::delete(&k);
    }

    /// Remove the entry an expiry timer belongs to; `false` when the timer
    /// is not one of this map's.
    pub fn on_timer(&self, timer: &Timer<'_>) -> bool {
        if timer.domain != self.domain || !timer.key.starts_with(&self.prefix) {
            return false;
        }
        if let Some(old) = state::get(timer.key)
            && i64::decode(&mut &old[..]).is_some_and(|e| e <= timer.time)
        {
            state::delete(timer.key);
        }
        true
    }
}
