//! The state functions off wasm: an in-memory stand-in, kept in
//! [`crate::testing`]'s per-thread state, that answers as the host does.

use super::{OutputMode, TimeDomain};
use crate::testing::NATIVE;

pub fn get(key: &[u8]) -> Option<Vec<u8>> {
    NATIVE.with(|n| n.borrow().state.get(key).cloned())
}
pub fn put(key: &[u8], value: &[u8]) {
    NATIVE.with(|n| n.borrow_mut().state.insert(key.to_vec(), value.to_vec()));
}
pub fn delete(key: &[u8]) {
    NATIVE.with(|n| n.borrow_mut().state.remove(key));
}
pub fn put_many(entries: &[(&[u8], &[u8])]) {
    NATIVE.with(|n| {
        (n.borrow_mut().state).extend(entries.iter().map(|(k, v)| (k.to_vec(), v.to_vec())))
    });
}
pub fn scan(start: &[u8], end: Option<&[u8]>, limit: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    NATIVE.with(|n| {
        n.borrow()
            .state
            .range(start.to_vec()..)
            .take_while(|(k, _)| end.is_none_or(|e| k.as_slice() < e))
            .take(limit as usize)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
}
pub fn scan_prefix(prefix: &[u8], after: Option<&[u8]>, limit: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    NATIVE.with(|n| {
        n.borrow()
            .state
            .range(prefix.to_vec()..)
            .skip_while(|(k, _)| after.is_some_and(|a| k.as_slice() <= a))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit as usize)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
}
pub fn register_timer(d: TimeDomain, key: &[u8], at: i64) {
    NATIVE.with(|n| n.borrow_mut().timers.insert((d, at, key.to_vec())));
}
pub fn delete_timer(d: TimeDomain, key: &[u8], at: i64) {
    NATIVE.with(|n| n.borrow_mut().timers.remove(&(d, at, key.to_vec())));
}
pub fn expire(d: TimeDomain, key: &[u8], at: i64) {
    NATIVE.with(|n| n.borrow_mut().expiries.insert((d, at, key.to_vec())));
}
pub fn expire_many(d: TimeDomain, expiries: &[(&[u8], i64)]) {
    for &(key, at) in expiries {
        expire(d, key, at);
    }
}
/// As the host answers: ranges in order, stopping before one whose
/// answer could pass 10,000 entries in all (the first always answered).
pub fn scan_many(ranges: &[(&[u8], &[u8])], limit: u32) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let limit = limit.min(10_000);
    let mut left = 10_000u32;
    let mut out = Vec::new();
    for &(start, end) in ranges {
        if left < limit && !out.is_empty() {
            break;
        }
        let got = scan(start, Some(end), limit);
        left = left.saturating_sub(got.len() as u32);
        out.push(got);
    }
    out
}
pub fn cancel_expiry(d: TimeDomain, key: &[u8], at: i64) {
    NATIVE.with(|n| n.borrow_mut().expiries.remove(&(d, at, key.to_vec())));
}
pub fn watermark() -> Option<i64> {
    NATIVE.with(|n| n.borrow().watermark)
}
pub fn processing_time() -> i64 {
    NATIVE.with(|n| n.borrow().processing_time)
}
pub fn output_mode() -> OutputMode {
    NATIVE.with(|n| n.borrow().output_mode)
}
pub fn event_time() -> bool {
    NATIVE.with(|n| n.borrow().event_time)
}
pub fn source() -> Option<String> {
    NATIVE.with(|n| n.borrow().source.clone())
}
pub fn state_keys() -> Option<super::StateKeys> {
    NATIVE.with(|n| {
        let n = n.borrow();
        let keys = n.state_keys.as_ref()?;
        let (mut bytes, mut ends) = (Vec::new(), Vec::new());
        for k in keys {
            bytes.extend_from_slice(k);
            ends.push(weir_wire::end(bytes.len()));
        }
        Some(super::StateKeys::new(bytes, ends))
    })
}
