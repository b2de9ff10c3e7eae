//! The state functions on wasm: the host's `state`, `timers` and `context`
//! imports.

use super::{OutputMode, TimeDomain};
use crate::bindings::weir::transform::{context, state, timers, types};

fn domain(d: TimeDomain) -> types::TimeDomain {
    match d {
        TimeDomain::EventTime => types::TimeDomain::EventTime,
        TimeDomain::ProcessingTime => types::TimeDomain::ProcessingTime,
    }
}

pub fn get(key: &[u8]) -> Option<Vec<u8>> {
    state::get(key)
}
pub fn put(key: &[u8], value: &[u8]) {
    state::put(key, value)
}
pub fn delete(key: &[u8]) {
    state::delete(key)
}
pub fn put_many(entries: &[(&[u8], &[u8])]) {
    let entries: Vec<state::EntryParam<'_>> = entries
        .iter()
        .map(|&(key, value)| state::EntryParam { key, value })
        .collect();
    state::put_many(&entries)
}
pub fn scan(start: &[u8], end: Option<&[u8]>, limit: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    state::scan(start, end, limit)
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect()
}
pub fn scan_many(ranges: &[(&[u8], &[u8])], limit: u32) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let wit: Vec<state::KeyRange<'_>> = ranges
        .iter()
        .map(|&(start, end)| state::KeyRange {
            start,
            end: Some(end),
        })
        .collect();
    state::scan_many(&wit, limit)
        .into_iter()
        .map(|l| l.into_iter().map(|e| (e.key, e.value)).collect())
        .collect()
}
pub fn scan_prefix(prefix: &[u8], after: Option<&[u8]>, limit: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    state::scan_prefix(prefix, after, limit)
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect()
}
pub fn register_timer(d: TimeDomain, key: &[u8], at: i64) {
    timers::register(domain(d), key, at)
}
pub fn delete_timer(d: TimeDomain, key: &[u8], at: i64) {
    timers::delete(domain(d), key, at)
}
pub fn expire(d: TimeDomain, key: &[u8], at: i64) {
    timers::expire(domain(d), key, at)
}
pub fn expire_many(d: TimeDomain, expiries: &[(&[u8], i64)]) {
    let expiries: Vec<timers::Expiry<'_>> = expiries
        .iter()
        .map(|&(key, at)| timers::Expiry { key, at })
        .collect();
    timers::expire_many(domain(d), &expiries)
}
pub fn cancel_expiry(d: TimeDomain, key: &[u8], at: i64) {
    timers::cancel_expiry(domain(d), key, at)
}
pub fn watermark() -> Option<i64> {
    context::watermark()
}
pub fn processing_time() -> i64 {
    context::processing_time()
}
pub fn event_time() -> bool {
    context::event_time()
}
pub fn source() -> Option<String> {
    context::source()
}
pub fn state_keys() -> Option<super::StateKeys> {
    context::state_keys().map(|c| super::StateKeys::new(c.keys, c.key_ends))
}
pub fn output_mode() -> OutputMode {
    match context::query_output_mode() {
        context::OutputMode::Append => OutputMode::Append,
        context::OutputMode::Update => OutputMode::Update,
        context::OutputMode::Complete => OutputMode::Complete,
    }
}
