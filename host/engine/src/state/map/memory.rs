//! The memory map: an ordered map whose entries carry a changed flag, and
//! a list of the keys removed since the last version.
//!
//! A version's delta is the removed keys, the keys popped from the front
//! (as one range), then the flagged entries in key order. Tracking changes
//! in the entries themselves costs no search per write, where a set of
//! changed keys cost a second ordered insert per write (a few dozen
//! comparisons of keys that often share long prefixes).
//! When many entries changed, the delta walks the map; when few did, it
//! sorts the keys flagged since the last version (copied, one after
//! another, into one buffer) and looks each up, so a large state with a
//! few changes per version is not walked whole.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::key::{Key, KeyRef};
use super::{Change, clear_for_reuse};

#[derive(Debug, Default)]
struct Slot {
    value: Vec<u8>,
    changed: bool,
}

#[derive(Debug, Default)]
pub(crate) struct MemoryMap {
    entries: BTreeMap<Key, Slot>,
    /// Keys removed since the last version, in removal order; a key may
    /// repeat, or be present again (then it is also flagged).
    removed: Vec<Vec<u8>>,
    /// Entries flagged now.
    changed: usize,
    /// Every key flagged since the last version, one after another, and
    /// where each ends (a key flagged, removed and added again repeats).
    flagged: Vec<u8>,
    flagged_ends: Vec<usize>,
    /// The largest key popped from the front since the last version (when
    /// `popped`): every key of the last version up to it is gone or
    /// flagged again, so one range removal records them all.
    popped_through: Vec<u8>,
    popped: bool,
    /// A merge flagged entries without listing their keys in `flagged`:
    /// the next delta walks the map.
    unlisted: bool,
}

/// What a merged entry found under its key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Merged {
    Added,
    /// The value it replaced (a put).
    Replaced(Vec<u8>),
    /// Present already and left as it was (a timer).
    Kept,
}

/// Look the flagged keys up, rather than walk the map, when at most one
/// entry in this many changed.
const SPARSE: usize = 8;

impl MemoryMap {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&self, k: &[u8]) -> Option<&[u8]> {
        self.entries.get(KeyRef::new(k)).map(|s| s.value.as_slice())
    }

    /// Set `k` to `v`; the value it replaced.
    pub(crate) fn insert(&mut self, k: Vec<u8>, v: Vec<u8>) -> Option<Vec<u8>> {
        let slot = Slot {
            value: v,
            changed: true,
        };
        let start = self.flagged.len();
        self.flagged.extend_from_slice(&k);
        let old = self.entries.insert(Key(k), slot);
        if old.as_ref().is_some_and(|o| o.changed) {
            self.flagged.truncate(start);
        } else {
            self.changed += 1;
            self.flagged_ends.push(self.flagged.len());
        }
        old.map(|s| s.value)
    }

    /// Add `k` with an empty value unless present (a timer); whether added.
    pub(crate) fn insert_new(&mut self, k: Vec<u8>) -> bool {
        let start = self.flagged.len();
        self.flagged.extend_from_slice(&k);
        match self.entries.entry(Key(k)) {
            std::collections::btree_map::Entry::Occupied(_) => {
                self.flagged.truncate(start);
                false
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(Slot {
                    value: Vec::new(),
                    changed: true,
                });
                self.changed += 1;
                self.flagged_ends.push(self.flagged.len());
                true
            }
        }
    }

    pub(crate) fn remove(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        let (key, slot) = self.entries.remove_entry(KeyRef::new(k))?;
        self.changed -= usize::from(slot.changed);
        self.removed.push(key.0);
        Some(slot.value)
    }

    /// [`MemoryMap::remove`], leaving the key out of the next delta.
    pub(crate) fn remove_unlisted(&mut self, k: &[u8]) -> Option<Vec<u8>> {
        let slot = self.entries.remove(KeyRef::new(k))?;
        self.changed -= usize::from(slot.changed);
        Some(slot.value)
    }

    /// Remove the first entry if `due(key)`; its key, and whether it was
    /// in the last version (not changed since). Popped keys are not listed
    /// one by one: the delta removes them as a range.
    pub(crate) fn pop_first_if(&mut self, due: impl Fn(&[u8]) -> bool) -> Option<(Vec<u8>, bool)> {
        let entry = self.entries.first_entry()?;
        if !due(&entry.key().0) {
            return None;
        }
        let (key, slot) = entry.remove_entry();
        self.changed -= usize::from(slot.changed);
        if !self.popped || KeyRef::new(&key.0) > KeyRef::new(&self.popped_through) {
            self.popped_through.clear();
            self.popped_through.extend_from_slice(&key.0);
            self.popped = true;
        }
        Some((key.0, !slot.changed))
    }

    /// Remove every entry below `end`, as [`MemoryMap::pop_first_if`]
    /// would one by one: their keys, each with whether it was in the last
    /// version. One split of the tree, where popping searched and
    /// rebalanced it per entry (W3 expires about half its state a batch).
    pub(crate) fn pop_below(&mut self, end: &[u8]) -> Vec<(Vec<u8>, bool)> {
        let rest = self.entries.split_off(KeyRef::new(end));
        let due = std::mem::replace(&mut self.entries, rest);
        let mut out = Vec::with_capacity(due.len());
        for (key, slot) in due {
            self.changed -= usize::from(slot.changed);
            out.push((key.0, !slot.changed));
        }
        if let Some((last, _)) = out.last()
            && (!self.popped || KeyRef::new(last) > KeyRef::new(&self.popped_through))
        {
            self.popped_through.clear();
            self.popped_through.extend_from_slice(last);
            self.popped = true;
        }
        out
    }

    /// Whether merging `n` entries beats a search per entry: the merge
    /// rebuilds the map, so it pays when they are many against its size.
    pub(crate) fn merge_pays(&self, n: usize) -> bool {
        n >= 1024 && n.saturating_mul(4) >= self.entries.len()
    }

    /// Set every entry of `new` (sorted by key, each key once) with one
    /// pass over the map, which is rebuilt: W3's batches put about as many
    /// rows and expiries as each map held, and a search per entry (a few
    /// dozen comparisons through keys scattered in memory) cost several
    /// times a rebuild. An existing key takes the new value when `replace`
    /// (a put) or keeps its own (a timer, registered once). `each` hears
    /// what every new entry found, before it goes in.
    pub(crate) fn merge_sorted(
        &mut self,
        new: Vec<(Vec<u8>, Vec<u8>)>,
        replace: bool,
        each: &mut dyn FnMut(&[u8], Merged),
    ) {
        let mut old = std::mem::take(&mut self.entries).into_iter().peekable();
        let mut out: Vec<(Key, Slot)> = Vec::with_capacity(old.len() + new.len());
        for (k, v) in new {
            while let Some((o, _)) = old.peek()
                && KeyRef::new(&o.0) < KeyRef::new(&k)
            {
                out.extend(old.next());
            }
            match old.next_if(|(o, _)| o.0 == k) {
                Some((o, slot)) if replace => {
                    self.changed += usize::from(!slot.changed);
                    each(&k, Merged::Replaced(slot.value));
                    out.push((
                        o,
                        Slot {
                            value: v,
                            changed: true,
                        },
                    ));
                }
                Some(kept) => {
                    each(&k, Merged::Kept);
                    out.push(kept);
                }
                None => {
                    self.changed += 1;
                    each(&k, Merged::Added);
                    out.push((
                        Key(k),
                        Slot {
                            value: v,
                            changed: true,
                        },
                    ));
                }
            }
        }
        out.extend(old);
        self.unlisted = true;
        // Sorted input: `from_iter` checks the order and builds the tree
        // bottom-up, in one pass.
        self.entries = out.into_iter().collect();
    }

    /// Entries from `lo` on, in key order.
    pub(crate) fn range<'a>(
        &'a self,
        lo: Bound<&[u8]>,
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let lo = lo.map(KeyRef::new);
        self.entries
            .range::<KeyRef, _>((lo, Bound::Unbounded))
            .map(|(k, s)| (k.0.as_slice(), s.value.as_slice()))
    }

    /// Every change since the last version: the removed keys, the range
    /// popped from the front, then the changed entries in key order; and
    /// forget the changes.
    /// Applied in this order, they give this map from the last version.
    pub(crate) fn drain_changes(&mut self, f: &mut dyn FnMut(Change<'_>)) {
        for k in &self.removed {
            f(Change::Remove(k));
        }
        if std::mem::take(&mut self.popped) {
            f(Change::RemoveThrough(&self.popped_through));
        }
        clear_for_reuse(&mut self.removed);
        if !std::mem::take(&mut self.unlisted)
            && self.changed.saturating_mul(SPARSE) <= self.entries.len()
        {
            let mut keys: Vec<&[u8]> = Vec::with_capacity(self.flagged_ends.len());
            let mut start = 0;
            for &end in &self.flagged_ends {
                keys.push(&self.flagged[start..end]);
                start = end;
            }
            keys.sort_unstable_by(|a, b| KeyRef::new(a).cmp(KeyRef::new(b)));
            keys.dedup();
            for k in keys {
                if let Some(slot) = self.entries.get_mut(KeyRef::new(k))
                    && std::mem::take(&mut slot.changed)
                {
                    f(Change::Put(k, &slot.value));
                }
            }
        } else {
            for (k, slot) in self.entries.iter_mut() {
                if std::mem::take(&mut slot.changed) {
                    f(Change::Put(&k.0, &slot.value));
                }
            }
        }
        self.changed = 0;
        clear_for_reuse(&mut self.flagged);
        clear_for_reuse(&mut self.flagged_ends);
    }
}

#[cfg(test)]
mod tests {
    use super::{Change, MemoryMap};

    fn changes(m: &mut MemoryMap) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        m.drain_changes(&mut |c| match c {
            Change::Put(k, v) => out.push((k.to_vec(), Some(v.to_vec()))),
            Change::Remove(k) => out.push((k.to_vec(), None)),
            // A range removal shows as its last key after "<=".
            Change::RemoveThrough(k) => out.push(([b"<=", k].concat(), None)),
        });
        out
    }

    #[test]
    fn few_or_many_changes_come_out_the_same_way() {
        // 1,000 entries; then 10 changed (looked up) or 900 (walked): the
        // changes come out in key order either way, each once.
        for changed in [10usize, 900] {
            let mut m = MemoryMap::default();
            for i in 0..1000u32 {
                m.insert(format!("k{i:04}").into_bytes(), vec![1]);
            }
            changes(&mut m);
            let mut want = Vec::new();
            for i in (0..changed as u32).rev() {
                let k = format!("k{:04}", i * 1000 / changed as u32).into_bytes();
                m.insert(k.clone(), vec![2]);
                m.insert(k.clone(), vec![3]);
                want.push((k, Some(vec![3])));
            }
            m.remove(b"k0000");
            m.insert(b"k0000".to_vec(), vec![4]);
            want.retain(|(k, _)| k != b"k0000");
            want.push((b"k0000".to_vec(), Some(vec![4])));
            want.sort();
            want.insert(0, (b"k0000".to_vec(), None));
            assert_eq!(changes(&mut m), want, "{changed} changed");
            assert!(changes(&mut m).is_empty());
        }
    }

    #[test]
    fn popping_below_a_key_is_popping_one_by_one() {
        let build = || {
            let mut m = MemoryMap::default();
            for i in 0..50u32 {
                m.insert(format!("k{i:02}").into_bytes(), vec![1]);
            }
            changes(&mut m);
            for i in (0..50u32).step_by(3) {
                m.insert(format!("k{i:02}").into_bytes(), vec![2]);
            }
            m
        };
        for end in [&b"k"[..], b"k00", b"k17x", b"k49", b"l"] {
            let (mut one, mut split) = (build(), build());
            let mut want = Vec::new();
            while let Some(e) = one.pop_first_if(|k| k < end) {
                want.push(e);
            }
            assert_eq!(split.pop_below(end), want, "below {end:?}");
            assert_eq!(split.len(), one.len());
            assert_eq!(changes(&mut split), changes(&mut one), "below {end:?}");
        }
    }

    #[test]
    fn changes_replay_into_the_same_map() {
        let mut m = MemoryMap::default();
        m.insert(b"a".to_vec(), b"1".to_vec());
        m.insert(b"b".to_vec(), b"2".to_vec());
        m.insert(b"c".to_vec(), b"3".to_vec());
        changes(&mut m);
        m.remove(b"a");
        m.insert(b"a".to_vec(), b"4".to_vec());
        m.remove(b"b");
        assert!(m.insert_new(b"d".to_vec()));
        assert!(!m.insert_new(b"d".to_vec()));
        m.remove(b"nope");
        let got = changes(&mut m);
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), None),
                (b"b".to_vec(), None),
                (b"a".to_vec(), Some(b"4".to_vec())),
                (b"d".to_vec(), Some(vec![])),
            ]
        );
        assert!(changes(&mut m).is_empty(), "changes are forgotten");
        assert_eq!(m.pop_first_if(|k| k == b"a"), Some((b"a".to_vec(), true)));
        assert_eq!(m.pop_first_if(|k| k == b"a"), None);
        assert_eq!(changes(&mut m), vec![(b"<=a".to_vec(), None)]);
        assert_eq!(m.len(), 2);
    }
}
