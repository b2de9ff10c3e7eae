//! State keys as the memory map orders them: by their bytes, compared
//! inline eight at a time. Keys are short and often share long prefixes
//! (a namespace, a tag, a length); a B-tree search compares a few dozen of
//! them, and a call into the C library's `memcmp` per comparison cost more
//! than the comparison itself.

use std::borrow::Borrow;
use std::cmp::Ordering;

/// An owned key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Key(pub(crate) Vec<u8>);

/// A borrowed key, to look one up without copying it.
#[derive(Debug, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct KeyRef(pub(crate) [u8]);

impl KeyRef {
    pub(crate) fn new(k: &[u8]) -> &KeyRef {
        // SAFETY: `KeyRef` is `repr(transparent)` over `[u8]`, so the two
        // references have the same layout and metadata.
        unsafe { &*(k as *const [u8] as *const KeyRef) }
    }
}

/// The bytes' lexicographic order, as `[u8]::cmp` gives it.
fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (mut ac, mut bc) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (x, y) in (&mut ac).zip(&mut bc) {
        let x = u64::from_be_bytes(x.try_into().expect("8 bytes"));
        let y = u64::from_be_bytes(y.try_into().expect("8 bytes"));
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ac.remainder().iter().zip(bc.remainder()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for KeyRef {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// As the borrowed form orders (the map needs the two to agree).
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        KeyRef::new(&self.0).cmp(KeyRef::new(&other.0))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Borrow<KeyRef> for Key {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(&self.0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_compare_as_their_bytes() {
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut keys: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![255; 9]];
        for _ in 0..400 {
            // Short alphabets and shared prefixes: ties run deep.
            let len = (next() % 20) as usize;
            let prefix = if next() % 2 == 0 {
                b"\x00J\x00\x00".as_slice()
            } else {
                b""
            };
            let mut k = prefix.to_vec();
            k.extend((0..len).map(|_| (next() % 3) as u8 * 127));
            keys.push(k);
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(super::compare(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }
}
