//! The host side of the stateful world's imports: keyed state, timers and
//! the batch context, served from the [`StateContext`] the engine moved into
//! the store for the current call.
//!
//! [`StateContext`]: weir_engine::state::StateContext

use super::bindings::{
    ContextHost, Entry, Expiry, KeyColumn, KeyRange, StateHost, TimersHost, WitOutputMode,
    WitTimeDomain,
};
use super::store_data::StoreData;
use weir_engine::state::{ENTRY_OVERHEAD, OutputMode, TimeDomain};

/// Longest key accepted, in bytes: keys are compared and copied often.
const MAX_KEY: usize = 64 << 10;
/// Most entries one scan (or one `scan-many`, in all) returns, whatever
/// the guest asks for: a call's answer is copied whole into host memory.
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

type Scanned = Vec<(Vec<u8>, Vec<u8>)>;

/// `scan-many`: each range scanned with `limit` (at most `MAX_SCAN`), in
/// order, while the next answer cannot take the call past `MAX_SCAN`
/// entries in all; the first range is always answered, so a guest asking
/// again for the rest always gets further.
fn scan_ranges(
    ranges: Vec<KeyRange>,
    limit: u32,
    mut scan: impl FnMut(&[u8], Option<&[u8]>, usize) -> Scanned,
) -> Vec<Vec<Entry>> {
    let limit = limit.min(MAX_SCAN) as usize;
    let mut left = MAX_SCAN as usize;
    let mut out = Vec::with_capacity(ranges.len());
    for r in ranges {
        if left < limit && !out.is_empty() {
            break;
        }
        let got = scan(&r.start, r.end.as_deref(), limit);
        left = left.saturating_sub(got.len());
        out.push(entries(got));
    }
    out
}

impl StoreData {
    /// Whether writes of keys this long, `size` bytes in all, would each
    /// be admitted (then none needs its own check): room for all of them,
    /// with each one's overhead, as if every key were new.
    /// The tenant is charged for that room (state counts against its
    /// memory quota).
    fn fits(&mut self, key_lens: impl ExactSizeIterator<Item = usize>, size: usize) -> bool {
        let overhead = key_lens.len().saturating_mul(ENTRY_OVERHEAD);
        let mut key_lens = key_lens;
        let total = self
            .ctx
            .state
            .memory_bytes()
            .saturating_add(size)
            .saturating_add(overhead);
        key_lens.all(|l| l <= MAX_KEY)
            && total <= self.max_state
            && self.limiter.charge_state(total)
    }

    /// Refuse a write that would take the state past its limit (or a key
    /// past its size limit); the call then fails as out of memory.
    /// Past the tenant's memory quota it is refused too (the call fails
    /// as the tenant's quota).
    fn admit(&mut self, key: &[u8], value_len: usize) -> bool {
        let total = self.ctx.state.memory_bytes() + key.len() + value_len;
        if key.len() > MAX_KEY || total > self.max_state {
            self.state_exceeded = true;
            return false;
        }
        self.limiter.charge_state(total)
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
        let size = entries.iter().map(|e| e.key.len() + e.value.len());
        if self.fits(entries.iter().map(|e| e.key.len()), size.sum()) {
            let entries = entries.into_iter().map(|e| (e.key, e.value)).collect();
            self.ctx.state.put_many(entries);
            return;
        }
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

    fn scan_many(&mut self, ranges: Vec<KeyRange>, limit: u32) -> Vec<Vec<Entry>> {
        let state = &self.ctx.state;
        scan_ranges(ranges, limit, |start, end, n| state.scan(start, end, n))
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

    fn expire_many(&mut self, d: WitTimeDomain, expiries: Vec<Expiry>) {
        let size = expiries.iter().map(|e| e.key.len()).sum();
        if self.fits(expiries.iter().map(|e| e.key.len()), size) {
            let expiries = expiries.into_iter().map(|e| (e.key, e.at)).collect();
            self.ctx.state.register_expiries(domain(d), expiries);
            return;
        }
        for e in expiries {
            if !self.admit(&e.key, 0) {
                return;
            }
            self.ctx.state.register_expiry(domain(d), &e.key, e.at);
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

    fn state_keys(&mut self) -> Option<KeyColumn> {
        let keys = self.call_keys.as_ref()?;
        Some(KeyColumn {
            keys: keys.bytes().to_vec(),
            key_ends: keys.ends().to_vec(),
        })
    }

    fn query_output_mode(&mut self) -> WitOutputMode {
        match self.ctx.output_mode {
            OutputMode::Append => WitOutputMode::Append,
            OutputMode::Update => WitOutputMode::Update,
            OutputMode::Complete => WitOutputMode::Complete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_state_counts_against_the_tenants_memory_quota() {
        let scheduler = crate::tenant::Scheduler::new(Some(1), std::time::Duration::from_millis(5));
        let tenant = crate::tenant::Tenant::new("acme", 10_000, 1, &scheduler);
        let mut data = StoreData::new(
            "acme/p/task-0".into(),
            &crate::Limits::default(),
            &crate::Sandbox::default(),
            Some(tenant.clone()),
        )
        .unwrap();
        data.put(b"a".to_vec(), vec![0; 4000]);
        assert!(tenant.memory_used() >= 4000, "{}", tenant.memory_used());
        assert!(data.get(b"a".to_vec()).is_some());
        // Past the tenant's quota (well under the state limit): refused.
        data.put(b"b".to_vec(), vec![0; 8000]);
        assert!(data.get(b"b".to_vec()).is_none());
        assert!(data.limiter.tenant_exceeded);
        drop(data);
        assert_eq!(tenant.memory_used(), 0, "released with the instance");
    }

    /// Keys 0..n (big-endian u32), scanned as the keyed state does.
    fn scanner(n: u32) -> impl FnMut(&[u8], Option<&[u8]>, usize) -> Scanned {
        let keys: Vec<Vec<u8>> = (0..n).map(|i| i.to_be_bytes().to_vec()).collect();
        move |start, end, limit| {
            keys.iter()
                .filter(|k| k.as_slice() >= start && end.is_none_or(|e| k.as_slice() < e))
                .take(limit)
                .map(|k| (k.clone(), Vec::new()))
                .collect()
        }
    }

    fn range(from: u32, to: u32) -> KeyRange {
        KeyRange {
            start: from.to_be_bytes().to_vec(),
            end: Some(to.to_be_bytes().to_vec()),
        }
    }

    #[test]
    fn every_range_is_answered_as_its_own_scan_while_the_call_stays_small() {
        let got = scan_ranges(
            vec![range(0, 3), range(10, 10), range(5, 100)],
            4,
            scanner(50),
        );
        let lens: Vec<usize> = got.iter().map(Vec::len).collect();
        assert_eq!(lens, [3, 0, 4]);
        assert_eq!(got[2][0].key, 5u32.to_be_bytes());
    }

    #[test]
    fn a_call_stops_before_a_range_that_could_pass_the_limit_but_answers_one() {
        // 1,000 entries a range: nine fit under 10,000 with room for a
        // tenth only while 1,000 are left.
        let ranges: Vec<KeyRange> = (0..30).map(|i| range(i * 1000, i * 1000 + 1000)).collect();
        let got = scan_ranges(ranges, 1000, scanner(40_000));
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|l| l.len() == 1000));
        // A limit above the cap is the cap, and one range is still answered.
        let got = scan_ranges(
            vec![range(0, 40_000), range(0, 1)],
            u32::MAX,
            scanner(40_000),
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), MAX_SCAN as usize);
    }
}
