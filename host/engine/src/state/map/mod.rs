//! Where a state partition's entries live: an ordered map in memory (the
//! default, fastest), or an embedded redb database on local disk for state
//! that outgrows memory (`[state] backend = "disk"`). Each map also knows
//! what changed since the last checkpointed version, for the next delta.

use std::borrow::Cow;
use std::ops::Bound;

mod disk;
mod key;
mod memory;

use disk::DiskMap;
pub(crate) use key::KeyRef;
pub(crate) use memory::{MemoryMap, Merged};

/// Receives a version's changes: (key, value now or `None`: removed).
pub(crate) type ChangeSink<'a> = dyn FnMut(&[u8], Option<&[u8]>) + 'a;

/// One change of a version, as its delta records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change<'a> {
    Put(&'a [u8], &'a [u8]),
    Remove(&'a [u8]),
    /// Every key of this key's namespace (first byte) up to and including
    /// it is gone: timers fired from the front, in one entry instead of
    /// one per timer. For expiries, so are the user keys of those that
    /// were in the last version (they fired; cancelled ones are listed as
    /// removals before this entry): their removals are not listed.
    RemoveThrough(&'a [u8]),
}

/// Empty `v` but keep its buffer for the next version or call, which
/// usually holds about as many items; give back what is over twice this
/// round's (after a load, or one outsized batch).
pub(crate) fn clear_for_reuse<T>(v: &mut Vec<T>) {
    let used = v.len();
    v.clear();
    if v.capacity() > used.saturating_mul(2).max(4096) {
        v.shrink_to(used);
    }
}

/// Which map holds a partition's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StateBackend {
    #[default]
    Memory,
    /// redb in a temporary directory (`$TMPDIR`), removed when the task ends.
    Disk,
}

pub(crate) enum Map {
    Memory(MemoryMap),
    Disk(Box<DiskMap>),
}

impl Default for Map {
    fn default() -> Self {
        Map::Memory(MemoryMap::default())
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Map::Memory(m) => write!(f, "Memory({} entries)", m.len()),
            Map::Disk(_) => f.write_str("Disk"),
        }
    }
}

impl Map {
    pub(crate) fn new(
        backend: StateBackend,
        scratch: Option<&std::path::Path>,
    ) -> Result<Map, String> {
        Ok(match backend {
            StateBackend::Memory => Map::default(),
            StateBackend::Disk => Map::Disk(Box::new(DiskMap::open(scratch)?)),
        })
    }

    pub(crate) fn get(&self, k: &[u8]) -> Option<Cow<'_, [u8]>> {
        match self {
            Map::Memory(m) => m.get(k).map(Cow::Borrowed),
            Map::Disk(d) => d.get(k).map(Cow::Owned),
        }
    }

    /// The map, when in memory.
    pub(crate) fn memory(&mut self) -> Option<&mut MemoryMap> {
        match self {
            Map::Memory(m) => Some(m),
            Map::Disk(_) => None,
        }
    }

    pub(crate) fn insert(&mut self, k: Vec<u8>, v: Vec<u8>) -> Option<Vec<u8>> {
        match self {
            Map::Memory(m) => m.insert(k, v),
            Map::Disk(d) => d.insert(k, &v),
        }
    }

    /// Add `k` with an empty value unless present (a timer); whether
    /// added (a registered timer is neither rewritten nor changed).
    pub(crate) fn insert_new(&mut self, k: Vec<u8>) -> bool {
        match self {
            Map::Memory(m) => m.insert_new(k),
            Map::Disk(d) => d.get(&k).is_none() && d.insert(k, &[]).is_none(),
        }
    }

    pub(crate) fn remove(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        match self {
            Map::Memory(m) => m.remove(k),
            Map::Disk(d) => d.remove(k),
        }
    }

    /// Remove `k` without listing it in the next delta, which records the
    /// removal another way (a key whose expiry fired: see
    /// [`Change::RemoveThrough`]). A disk map lists it all the same.
    pub(crate) fn remove_unlisted(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        match self {
            Map::Memory(m) => m.remove_unlisted(k),
            Map::Disk(d) => d.remove(k),
        }
    }

    /// Entries from `lo` on in key order, while `keep(key)`, at most `limit`.
    pub(crate) fn scan(
        &self,
        lo: Bound<&[u8]>,
        mut keep: impl FnMut(&[u8]) -> bool,
        limit: usize,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        match self {
            Map::Memory(m) => m
                .range(lo)
                .take_while(|(k, _)| keep(k))
                .take(limit)
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect(),
            Map::Disk(d) => d.scan(lo, &mut keep, limit),
        }
    }

    /// Call `f` with every entry in key order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&[u8], &[u8])) {
        match self {
            Map::Memory(m) => m.range(Bound::Unbounded).for_each(|(k, v)| f(k, v)),
            Map::Disk(d) => {
                let mut from: Option<Vec<u8>> = None;
                loop {
                    let lo = from.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                    let page = d.scan(lo, &mut |_| true, 4096);
                    for (k, v) in &page {
                        f(k, v);
                    }
                    match page.last() {
                        Some((k, _)) if page.len() == 4096 => from = Some(k.clone()),
                        _ => return,
                    }
                }
            }
        }
    }

    /// Call `f` with every change since the last version, and forget
    /// them. Applying them in this order to the last version gives this
    /// one.
    pub(crate) fn drain_changes(&mut self, mut f: impl FnMut(Change<'_>)) {
        match self {
            Map::Memory(m) => m.drain_changes(&mut f),
            Map::Disk(d) => d.drain_changes(&mut |k, v| {
                f(match v {
                    Some(v) => Change::Put(k, v),
                    None => Change::Remove(k),
                })
            }),
        }
    }

    /// The version was checkpointed (a disk map commits its transaction).
    pub(crate) fn checkpointed(&mut self, durable: bool) {
        if let Map::Disk(d) = self {
            d.checkpointed(durable);
        }
    }

    /// The first I/O error of a disk map, if any.
    pub(crate) fn error(&self) -> Option<String> {
        match self {
            Map::Memory(_) => None,
            Map::Disk(d) => d.error(),
        }
    }
}
