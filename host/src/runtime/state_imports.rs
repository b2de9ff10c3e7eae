//! The host side of the stateful world's imports: keyed state, timers and
//! the batch context, served from the [`StateContext`] the engine moved into
//! the store for the current call.
//!
//! [`StateContext`]: crate::engine::state::StateContext

use super::bindings::{ContextHost, Entry, StateHost, TimersHost, WitOutputMode, WitTimeDomain};
use super::store_data::StoreData;
use crate::engine::state::{OutputMode, TimeDomain};

/// Longest key accepted, in bytes: keys are compared and copied often.
const MAX_KEY: usize = 64 << 10;
/// Most entries one scan returns, whatever the guest asks for.
const MAX_SCAN: u32 = 10_000;

fn domain(d: WitTimeDomain) -> TimeDomain {
    match d {
        WitTimeDomain::EventTime => TimeDomain::EventTime,
        WitTimeDomain::ProcessingTime => TimeDomain::ProcessingTime,
    }
}

fn entries(v: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<Entry> {
    v.into_iter()
        .map(|(key, value)| Entry { key, value })
        .collect()
}

impl StoreData {
    /// Refuse a write that would take the state past its limit (or a key
    /// past its size limit); the call then fails as out of memory.
    fn admit(&mut self, key: &[u8], value_len: usize) -> bool {
        if key.len() > MAX_KEY
            || self.ctx.state.memory_bytes() + key.len() + value_len > self.max_state
        {
            self.state_exceeded = true;
            return false;
        }
        true
    }
}

impl StateHost for StoreData {
    fn get(&mut self, key: Vec<u8>) -> Option<Vec<u8>> {
        self.ctx.state.get(&key).map(|v| v.into_owned())
    }

    fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        if self.admit(&key, value.len()) {
            self.ctx.state.put(&key, value);
        }
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.ctx.state.delete(&key);
    }

    fn put_many(&mut self, entries: Vec<Entry>) {
        for e in entries {
            if !self.admit(&e.key, e.value.len()) {
                return;
            }
            self.ctx.state.put(&e.key, e.value);
        }
    }

    fn scan(&mut self, start: Vec<u8>, end: Option<Vec<u8>>, limit: u32) -> Vec<Entry> {
        let limit = limit.min(MAX_SCAN) as usize;
        entries(self.ctx.state.scan(&start, end.as_deref(), limit))
    }

    fn scan_prefix(&mut self, prefix: Vec<u8>, after: Option<Vec<u8>>, limit: u32) -> Vec<Entry> {
        let limit = limit.min(MAX_SCAN) as usize;
        entries(self.ctx.state.scan_prefix(&prefix, after.as_deref(), limit))
    }
}

impl TimersHost for StoreData {
    fn register(&mut self, d: WitTimeDomain, key: Vec<u8>, at: i64) {
        if self.admit(&key, 0) {
            self.ctx.state.register_timer(domain(d), &key, at);
        }
    }

    fn delete(&mut self, d: WitTimeDomain, key: Vec<u8>, at: i64) {
        self.ctx.state.delete_timer(domain(d), &key, at);
    }

    fn expire(&mut self, d: WitTimeDomain, key: Vec<u8>, at: i64) {
        if self.admit(&key, 0) {
            self.ctx.state.register_expiry(domain(d), &key, at);
        }
    }

    fn cancel_expiry(&mut self, d: WitTimeDomain, key: Vec<u8>, at: i64) {
        self.ctx.state.cancel_expiry(domain(d), &key, at);
    }
}

impl ContextHost for StoreData {
    fn watermark(&mut self) -> Option<i64> {
        self.ctx.watermark
    }

    fn processing_time(&mut self) -> i64 {
        self.ctx.processing_time
    }

    fn event_time(&mut self) -> bool {
        self.ctx.event_time
    }

    fn source(&mut self) -> Option<String> {
        self.ctx.source.clone()
    }

    fn query_output_mode(&mut self) -> WitOutputMode {
        match self.ctx.output_mode {
            OutputMode::Append => WitOutputMode::Append,
            OutputMode::Update => WitOutputMode::Update,
            OutputMode::Complete => WitOutputMode::Complete,
        }
    }
}
