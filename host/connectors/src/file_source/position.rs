//! Where a file source is: a number of files read whole, then some whole
//! lines of the next one. A file larger than `max-bytes-per-trigger` is
//! split across batches at line boundaries, so one file never becomes one
//! batch as large as itself; the offset records the byte and the line count
//! where a batch stopped, so a re-run batch reads exactly the same lines and
//! numbers them the same way.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use weir_engine::{ConnectorError, Offset};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Position {
    /// Files read whole.
    pub files: usize,
    /// Bytes of file `files` read, always just after a newline.
    pub byte: u64,
    /// Lines in those bytes: the next line's number is `line + 1`.
    pub line: i64,
}

impl Position {
    pub fn whole(files: usize) -> Self {
        Position {
            files,
            byte: 0,
            line: 0,
        }
    }

    /// A plain file count when no file is part-read (the only shape before
    /// files were split, so older checkpoints read the same).
    pub fn to_offset(self) -> Offset {
        if self.byte == 0 {
            Offset::of(&Stored::Files(self.files))
        } else {
            Offset::of(&Stored::Within {
                files: self.files,
                byte: self.byte,
                line: self.line,
            })
        }
    }

    pub fn from_offset(o: &Offset) -> Result<Self, ConnectorError> {
        let unknown = || {
            ConnectorError(format!(
                "file source offset {o} is neither a file count nor {{files, byte, line}}"
            ))
        };
        match o.read::<Stored>().map_err(|_| unknown())? {
            Stored::Files(files) => Ok(Position::whole(files)),
            Stored::Within { files, byte, line } if line >= 0 => Ok(Position { files, byte, line }),
            Stored::Within { .. } => Err(unknown()),
        }
    }
}

/// A position as the checkpoint keeps it.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Stored {
    Files(usize),
    Within { files: usize, byte: u64, line: i64 },
}

/// Where a batch stops inside a file, and the bytes before it.
pub(super) struct Cut {
    /// Just after a newline.
    pub byte: u64,
    /// Lines between the batch's start in the file and `byte`.
    pub lines: i64,
    /// The file's bytes from the batch's start to `byte`: read once here,
    /// they are the batch's input, so the read that follows need not read
    /// them again.
    pub bytes: Vec<u8>,
}

/// Where to cut `path` (of `size` bytes) so that the lines from byte `from`
/// take at most `budget` bytes: just after the last newline within the
/// budget, or after the first newline past it when a single line is longer.
/// `None` when the rest of the file fits (no cut). Reads the file in 1 MiB
/// blocks.
pub(super) fn cut(
    path: &Path,
    size: u64,
    from: u64,
    budget: u64,
) -> Result<Option<Cut>, ConnectorError> {
    const BLOCK: usize = 1 << 20;
    if size.saturating_sub(from) <= budget {
        return Ok(None);
    }
    let err = |e: std::io::Error| ConnectorError(format!("{}: {e}", path.display()));
    let mut f = std::fs::File::open(path).map_err(err)?;
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(from)).map_err(err)?;
    let limit = from.saturating_add(budget);
    let mut bytes = Vec::with_capacity(usize::try_from(budget).unwrap_or(usize::MAX).min(64 << 20));
    let mut lines = 0i64;
    // The last cut within the budget, with its line count.
    let mut best: Option<(u64, i64)> = None;
    let done = |bytes: Vec<u8>, found: Option<(u64, i64)>| {
        found.map(|(byte, lines)| {
            let mut bytes = bytes;
            bytes.truncate((byte - from) as usize);
            Cut { byte, lines, bytes }
        })
    };
    loop {
        let at = bytes.len();
        bytes.resize(at + BLOCK, 0);
        let n = f.read(&mut bytes[at..]).map_err(err)?;
        bytes.truncate(at + n);
        if n == 0 {
            // The rest is one last line without a newline.
            return Ok(done(bytes, best));
        }
        for i in memchr::memchr_iter(b'\n', &bytes[at..]) {
            lines += 1;
            let end = from + (at + i) as u64 + 1;
            if end <= limit {
                best = Some((end, lines));
            } else {
                // Past the budget: the best cut, or this one when no whole
                // line fits.
                let found = best.or(Some((end, lines))).filter(|(c, _)| *c < size);
                return Ok(done(bytes, found));
            }
        }
    }
}
