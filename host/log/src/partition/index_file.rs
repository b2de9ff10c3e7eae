//! A segment's sparse index kept on disk (`<base>.index` beside
//! `<base>.log`), so a reader opening a long segment far from its start
//! finds its position without scanning the records before it.
//!
//! The rule that makes it safe without an fsync: an entry is written only
//! after the commit entry covering its record is durable, and committed
//! records are never cut or rewritten. An entry on disk therefore always
//! points at the record it names. A crash can only lose entries or leave a
//! torn or zeroed tail; every entry carries a CRC and offsets and positions
//! must rise, so a reader keeps the entries before the first bad one and
//! scans on from there, and the next writer cuts the tail off before it
//! appends.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::super::LogError;

/// `offset u64 LE, position u64 LE, crc32 of those 16 bytes u32 LE, 0 u32`.
pub(super) const ENTRY: usize = 24;

/// The index file of segment file `segment`.
pub(super) fn path_of(segment: &Path) -> PathBuf {
    segment.with_extension("index")
}

/// What a segment's index file holds: its valid entries, and the bytes
/// they take (a torn or corrupt tail after them is ignored).
#[derive(Debug, Default)]
pub(super) struct Loaded {
    pub entries: Vec<(u64, u64)>,
    pub valid_bytes: u64,
}

fn encode(out: &mut Vec<u8>, (offset, position): (u64, u64)) {
    let start = out.len();
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(&position.to_le_bytes());
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
}

fn decode(e: &[u8]) -> Option<(u64, u64)> {
    let u64_at = |i: usize| Some(u64::from_le_bytes(e.get(i..i + 8)?.try_into().ok()?));
    let (offset, position) = (u64_at(0)?, u64_at(8)?);
    let crc = u32::from_le_bytes(e.get(16..20)?.try_into().ok()?);
    (crc == crc32fast::hash(&e[..16]) && e[20..24] == [0; 4]).then_some((offset, position))
}

/// The valid entries of `path` for a segment starting at offset `base`
/// whose file holds `file_len` bytes; none when the file does not exist.
pub(super) fn load(path: &Path, base: u64, file_len: u64) -> Result<Loaded, LogError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(err) => {
            return Err(LogError::Io {
                path: path.into(),
                err,
            });
        }
    };
    let mut loaded = Loaded::default();
    let mut last = (base, 0);
    for e in bytes.chunks_exact(ENTRY) {
        match decode(e) {
            Some((o, p)) if o > last.0 && p > last.1 && p <= file_len => {
                loaded.entries.push((o, p));
                loaded.valid_bytes += ENTRY as u64;
                last = (o, p);
            }
            _ => break,
        }
    }
    Ok(loaded)
}

/// Append `entries` to `path` after its first `valid_bytes` (cutting a torn
/// tail first). No fsync: see the module's rule.
pub(super) fn append(
    path: &Path,
    valid_bytes: u64,
    entries: &[(u64, u64)],
) -> Result<(), LogError> {
    let io = |err| LogError::Io {
        path: path.into(),
        err,
    };
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    if f.metadata().map_err(io)?.len() != valid_bytes {
        f.set_len(valid_bytes).map_err(io)?;
    }
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(valid_bytes)).map_err(io)?;
    let mut buf = Vec::with_capacity(entries.len() * ENTRY);
    for e in entries {
        encode(&mut buf, *e);
    }
    f.write_all(&buf).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_before_a_torn_or_corrupt_one_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.index");
        append(&path, 0, &[(612, 4_000), (1_124, 8_000)]).unwrap();
        let loaded = load(&path, 100, 10_000).unwrap();
        assert_eq!(loaded.entries, [(612, 4_000), (1_124, 8_000)]);
        assert_eq!(loaded.valid_bytes, 48);
        // A torn entry, then zeros (a crash before the data reached disk).
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[7; 10]).unwrap();
        f.write_all(&[0; 48]).unwrap();
        assert_eq!(load(&path, 100, 10_000).unwrap().entries.len(), 2);
        // The next append cuts the tail off first.
        append(&path, 48, &[(1_636, 9_000)]).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 72);
        assert_eq!(load(&path, 100, 10_000).unwrap().entries.len(), 3);
        // A position past the segment's end, or a corrupt entry, ends the
        // trusted part.
        assert_eq!(load(&path, 100, 8_500).unwrap().entries.len(), 2);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load(&path, 100, 10_000).unwrap().entries, [(612, 4_000)]);
        // No file: no entries.
        assert!(
            load(&dir.path().join("x.index"), 0, 0)
                .unwrap()
                .entries
                .is_empty()
        );
    }
}
