//! A batch's puts and expiries in one pass: a guest's `put-many` or
//! `expire-many` that is large against the map it goes into is sorted and
//! merged into it (see [`MemoryMap::merge_sorted`]) instead of searched
//! for entry by entry. Counts, undo records and the next delta come out as
//! entry-by-entry writes leave them.

use super::timers::{TimeDomain, timer_key};
use super::{ENTRY_OVERHEAD, KeyedState, timer_map, user_key};
use crate::state::map::{KeyRef, Merged};

/// Sort by key; of entries with equal keys keep the last (a later put
/// wins).
fn sort_last_wins(entries: &mut Vec<(Vec<u8>, Vec<u8>)>) {
    entries.sort_by(|a, b| KeyRef::new(&a.0).cmp(KeyRef::new(&b.0)));
    // `dedup_by` keeps the first of a run: reversed, that is the last.
    entries.reverse();
    entries.dedup_by(|a, b| a.0 == b.0);
    entries.reverse();
}

/// What a merge did, for the bookkeeping after it: per merged entry its
/// raw key's length, where its key ends in `keys` (kept only while a call
/// runs, for undo, and only for entries that changed), its new value's
/// length and what it found.
#[derive(Default)]
struct Changes {
    entries: Vec<(usize, usize, usize, Merged)>,
    keys: Vec<u8>,
}

impl KeyedState {
    /// Put each `(key, value)` in order, as [`KeyedState::put`] does.
    pub fn put_many(&mut self, entries: Vec<(Vec<u8>, Vec<u8>)>) {
        if !self
            .map
            .memory()
            .is_some_and(|m| m.merge_pays(entries.len()))
        {
            for (k, v) in entries {
                self.put(&k, v);
            }
            return;
        }
        let puts = entries.len() as u64;
        let mut raw: Vec<(Vec<u8>, Vec<u8>)> = entries
            .into_iter()
            .map(|(k, v)| (user_key(&k), v))
            .collect();
        sort_last_wins(&mut raw);
        let record = self.call.is_some();
        let map = self.map.memory().expect("checked above");
        let changes = merge(map, raw, true, record);
        self.after_merge(true, changes);
        self.puts += puts;
    }

    /// Register each expiry, as [`KeyedState::register_expiry`] does.
    pub fn register_expiries(&mut self, domain: TimeDomain, expiries: Vec<(Vec<u8>, i64)>) {
        let ns = domain.expiry_namespace();
        let merge_pays = self
            .timers
            .as_ref()
            .is_some_and(|t| t[usize::from(ns) - 1].merge_pays(expiries.len()));
        if !merge_pays {
            for (k, at) in expiries {
                self.register_expiry(domain, &k, at);
            }
            return;
        }
        let mut raw: Vec<(Vec<u8>, Vec<u8>)> = expiries
            .into_iter()
            .map(|(k, at)| (timer_key(ns, at, &k), Vec::new()))
            .collect();
        sort_last_wins(&mut raw);
        let record = self.call.is_some();
        let map = timer_map(self.timers.as_mut().expect("checked above"), ns);
        let changes = merge(map, raw, false, record);
        self.after_merge(false, changes);
    }

    /// The counts and undo records `set` keeps, for a merge's changes.
    fn after_merge(&mut self, user: bool, changes: Changes) {
        let mut start = 0;
        for (key_len, end, len, found) in changes.entries {
            let old = match found {
                Merged::Replaced(old) => Some(old),
                Merged::Added => None,
                Merged::Kept => continue,
            };
            if user {
                self.bytes += len;
            }
            self.count(user, key_len + ENTRY_OVERHEAD, old.as_deref(), true);
            if self.call.is_some() {
                self.undo_keys.extend_from_slice(&changes.keys[start..end]);
                self.undo.push((self.undo_keys.len(), old));
                start = end;
            }
        }
    }
}

fn merge(
    map: &mut crate::state::map::MemoryMap,
    raw: Vec<(Vec<u8>, Vec<u8>)>,
    replace: bool,
    record: bool,
) -> Changes {
    let mut lens = raw
        .iter()
        .map(|(_, v)| v.len())
        .collect::<Vec<_>>()
        .into_iter();
    let mut c = Changes::default();
    map.merge_sorted(raw, replace, &mut |k, found| {
        let len = lens.next().expect("one length per entry");
        if record && found != Merged::Kept {
            c.keys.extend_from_slice(k);
        }
        c.entries.push((k.len(), c.keys.len(), len, found));
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::map::Change;

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Rows, counts (rows, updated, removed), bytes, and the delta.
    type Observed = (Vec<(Vec<u8>, Vec<u8>)>, [u64; 3], usize, Vec<String>);

    /// The state's contents, counts and next delta (which it drains; each
    /// map's removals in key order: a rolled back merge lists them in key
    /// order, not in call order).
    fn observe(s: &mut KeyedState) -> Observed {
        let rows = s.scan(b"", None, usize::MAX);
        let counts = [s.rows(), s.rows_updated(), s.rows_removed()];
        let bytes = s.memory_bytes();
        let mut delta = Vec::new();
        s.drain_delta(|c| {
            delta.push(match c {
                Change::Put(k, v) => format!("put {k:?} {v:?}"),
                Change::Remove(k) => format!("remove {k:?}"),
                Change::RemoveThrough(k) => format!("through {k:?}"),
            })
        });
        for run in delta.chunk_by_mut(|a, b| a.starts_with("remove") == b.starts_with("remove")) {
            if run[0].starts_with("remove") {
                run.sort();
            }
        }
        (rows, counts, bytes, delta)
    }

    #[test]
    fn merged_batches_leave_what_entry_by_entry_writes_leave() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        for round in 0..40 {
            let (mut bulk, mut single) = (KeyedState::default(), KeyedState::default());
            // A few versions: batches large and small against the map
            // (merged or not), repeated keys, expiries firing between.
            for version in 0..4 {
                let in_call = round % 2 == 0;
                if in_call {
                    bulk.begin_call();
                    single.begin_call();
                }
                let n = (rng(&mut seed) % 3000) as usize;
                let mut puts = Vec::new();
                let mut expiries = Vec::new();
                for _ in 0..n {
                    let k = format!("k{}", rng(&mut seed) % 4000).into_bytes();
                    let v = vec![b'v'; (rng(&mut seed) % 9) as usize];
                    let at = (rng(&mut seed) % 50) as i64 + version * 20;
                    expiries.push((k.clone(), at));
                    puts.push((k, v));
                }
                for (k, v) in puts.clone() {
                    single.put(&k, v);
                }
                for (k, at) in expiries.clone() {
                    single.register_expiry(TimeDomain::EventTime, &k, at);
                }
                bulk.put_many(puts);
                bulk.register_expiries(TimeDomain::EventTime, expiries);
                if in_call && version == 3 {
                    bulk.rollback_call();
                    single.rollback_call();
                } else if in_call {
                    bulk.end_call();
                    single.end_call();
                }
                let wm = version * 20 + 10;
                assert_eq!(
                    bulk.expire_due(TimeDomain::EventTime, wm),
                    single.expire_due(TimeDomain::EventTime, wm)
                );
                let (b, o) = (observe(&mut bulk), observe(&mut single));
                assert_eq!(b.0, o.0, "rows, round {round}, version {version}");
                assert_eq!(b.1, o.1, "counts, round {round}, version {version}");
                assert_eq!(b.2, o.2, "bytes, round {round}, version {version}");
                assert_eq!(
                    b.3.len(),
                    o.3.len(),
                    "delta, round {round}, version {version}"
                );
                if let Some(i) = (0..b.3.len()).find(|&i| b.3[i] != o.3[i]) {
                    panic!(
                        "delta, round {round}, version {version}, entry {i}: {} vs {}",
                        b.3[i], o.3[i]
                    );
                }
            }
        }
    }
}
