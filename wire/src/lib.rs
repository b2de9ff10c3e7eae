//! The columnar encoding rules of `wit/transform.wit`, written once for
//! both sides of the boundary: the host builds and checks batches with
//! them, and the Rust SDK builds its output with them, so the two cannot
//! drift apart. No dependencies, so a guest pays nothing for it.
//!
//! The rules: a `*-ends` column holds each record's exclusive end in its
//! data (bytes, or list entries for headers); an optional column is empty
//! when every record has its default there, and materialises (back-filled
//! with the default) at the first record that differs.

use std::fmt;

/// Record `i`'s part of a column described by end offsets.
#[inline]
pub fn span<'a, T>(data: &'a [T], ends: &[u32], i: usize) -> &'a [T] {
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &data[start..ends[i] as usize]
}

/// Record `i`'s entry of an optional column, `default` when it is empty.
#[inline]
pub fn optional<T: Copy>(col: &[T], i: usize, default: T) -> T {
    if col.is_empty() { default } else { col[i] }
}

/// Append record `n`'s entry to an optional column: nothing while every
/// entry so far equals `default`, else back-fill and push.
#[inline]
pub fn push_optional<T: Copy + PartialEq>(col: &mut Vec<T>, n: usize, default: T, v: T) {
    if v != default || !col.is_empty() {
        col.resize(n, default);
        col.push(v);
    }
}

/// An end offset for `len` items of data. Batches are bounded far below
/// 4 GiB by the host's limits, so a larger one is a bug, not input.
#[inline]
pub fn end(len: usize) -> u32 {
    u32::try_from(len).expect("a batch column holds less than 4 GiB")
}

/// Append record `n`'s key to the optional key columns (`key-ends`,
/// `has-key`), materialising them at the first record with a key.
#[inline]
pub fn push_key(
    keys: &mut Vec<u8>,
    key_ends: &mut Vec<u32>,
    has_key: &mut Vec<bool>,
    n: usize,
    key: Option<&[u8]>,
) {
    if key.is_some() || !key_ends.is_empty() {
        key_ends.resize(n, end(keys.len()));
        has_key.resize(n, false);
        keys.extend_from_slice(key.unwrap_or_default());
        key_ends.push(end(keys.len()));
        has_key.push(key.is_some());
    }
}

/// The `routes` entry for named output `name`: 1 + its index in
/// `outputs`, adding it on first use.
pub fn route(outputs: &mut Vec<String>, name: &str) -> u32 {
    match outputs.iter().position(|o| o == name) {
        Some(i) => end(i + 1),
        None => {
            outputs.push(name.to_owned());
            end(outputs.len())
        }
    }
}

/// A batch that breaks the encoding rules: which column, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodingError {
    pub column: &'static str,
    pub problem: String,
}

impl fmt::Display for EncodingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.column, self.problem)
    }
}

impl std::error::Error for EncodingError {}

pub fn malformed(column: &'static str, problem: String) -> EncodingError {
    EncodingError { column, problem }
}

/// A column that must have exactly `want` entries.
pub fn check_len(column: &'static str, got: usize, want: usize) -> Result<(), EncodingError> {
    if got == want {
        Ok(())
    } else {
        Err(malformed(
            column,
            format!("has {got} entries, expected {want}"),
        ))
    }
}

/// An optional column: empty, or one entry per record.
pub fn check_optional<T>(column: &'static str, col: &[T], n: usize) -> Result<(), EncodingError> {
    if col.is_empty() {
        Ok(())
    } else {
        check_len(column, col.len(), n)
    }
}

/// Ends that never decrease and stay within `data_len`, so [`span`]
/// cannot panic.
pub fn check_ends(
    column: &'static str,
    ends: &[u32],
    data_len: usize,
) -> Result<(), EncodingError> {
    let mut prev = 0u32;
    for (i, &end) in ends.iter().enumerate() {
        if end < prev {
            return Err(malformed(
                column,
                format!("entry {i} ({end}) is below the previous end ({prev})"),
            ));
        }
        prev = end;
    }
    if prev as usize > data_len {
        return Err(malformed(
            column,
            format!("last end {prev} is past the data length {data_len}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_columns_materialise_at_the_first_difference() {
        let mut col = Vec::new();
        push_optional(&mut col, 0, true, true);
        push_optional(&mut col, 1, true, true);
        assert!(col.is_empty());
        push_optional(&mut col, 2, true, false);
        push_optional(&mut col, 3, true, true);
        assert_eq!(col, [true, true, false, true]);
        assert!(!optional(&col, 2, true) && optional(&[], 7, true));
    }

    #[test]
    fn keys_back_fill_and_spans_read_them_back() {
        let (mut keys, mut ends, mut has) = (Vec::new(), Vec::new(), Vec::new());
        push_key(&mut keys, &mut ends, &mut has, 0, None);
        push_key(&mut keys, &mut ends, &mut has, 1, Some(b"ab"));
        push_key(&mut keys, &mut ends, &mut has, 2, Some(b""));
        assert_eq!(ends, [0, 2, 2]);
        assert_eq!(has, [false, true, true]);
        assert_eq!(span(&keys, &ends, 1), b"ab");
        assert_eq!(span(&keys, &ends, 2), b"");
    }

    #[test]
    fn routes_number_outputs_from_one() {
        let mut outputs = Vec::new();
        assert_eq!(route(&mut outputs, "a"), 1);
        assert_eq!(route(&mut outputs, "b"), 2);
        assert_eq!(route(&mut outputs, "a"), 1);
    }

    #[test]
    fn bad_ends_and_lengths_are_named() {
        assert!(check_ends("value-ends", &[1, 3], 3).is_ok());
        let e = check_ends("value-ends", &[2, 1], 3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "value-ends: entry 1 (1) is below the previous end (2)"
        );
        assert!(check_ends("key-ends", &[4], 3).is_err());
        assert!(check_optional("routes", &[0u32; 0], 5).is_ok());
        assert!(check_optional("routes", &[0u32; 2], 5).is_err());
    }
}
