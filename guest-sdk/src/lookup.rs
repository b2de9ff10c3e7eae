//! Stream-static lookups: a reference table (JSON lines or CSV) read from a
//! directory the pipeline grants the guest (`[transform.sandbox] dirs`,
//! read-only), keyed by one column, and reloaded when the file changes.
//! Enable with the `lookup` feature.
//!
//! Open the table in `init`, call [`Table::refresh`] at the start of each
//! batch (one file status call), and look records up with [`Table::get`]:
//!
//! ```no_run
//! # use weir_guest::lookup::Table;
//! let mut users = Table::open("/ref/users.csv", "user").unwrap();
//! users.refresh().unwrap();
//! let country = users.get("user-7").and_then(|row| row.get("country"));
//! ```
//!
//! A lookup reads the file as it is when the batch runs: a batch re-run
//! after a crash sees the table's contents at the re-run, as in Spark's
//! stream-static joins.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Map, Value};

/// One row of a table: column name -> value (CSV cells are strings).
pub type Row = Map<String, Value>;

/// How a table's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line; blank lines are skipped.
    JsonLines,
    /// A header line naming the columns, then one row per line.
    Csv,
}

/// A reference table keyed by one column.
#[derive(Debug)]
pub struct Table {
    path: PathBuf,
    format: Format,
    key: String,
    rows: HashMap<String, Row>,
    /// Modification time and length of the file as loaded.
    loaded: Option<(Option<SystemTime>, u64)>,
    reloads: u64,
}

impl Table {
    /// Load `path` keyed by column `key`; `.csv` files are CSV, anything
    /// else JSON lines.
    pub fn open(path: impl AsRef<Path>, key: &str) -> Result<Table, String> {
        let path = path.as_ref();
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Format::Csv,
            _ => Format::JsonLines,
        };
        Self::open_as(path, format, key)
    }

    /// Load `path`, written in `format`, keyed by column `key`.
    pub fn open_as(path: impl AsRef<Path>, format: Format, key: &str) -> Result<Table, String> {
        let mut t = Table {
            path: path.as_ref().to_path_buf(),
            format,
            key: key.to_string(),
            rows: HashMap::new(),
            loaded: None,
            reloads: 0,
        };
        let stamp = t.stamp()?;
        t.load(stamp)?;
        Ok(t)
    }

    /// Reload the file when it changed since it was loaded (another
    /// modification time or length); returns whether it did. On an error
    /// (the file is gone, or a line is bad) the table keeps its previous
    /// contents and the error says why.
    pub fn refresh(&mut self) -> Result<bool, String> {
        let stamp = self.stamp()?;
        if Some(stamp) == self.loaded {
            return Ok(false);
        }
        self.load(stamp)?;
        self.reloads += 1;
        Ok(true)
    }

    /// The row whose key column holds `key` (a number's key is its text).
    pub fn get(&self, key: &str) -> Option<&Row> {
        self.rows.get(key)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// How many times [`Table::refresh`] reloaded the file.
    pub fn reloads(&self) -> u64 {
        self.reloads
    }

    fn stamp(&self) -> Result<(Option<SystemTime>, u64), String> {
        let m = std::fs::metadata(&self.path)
            .map_err(|e| format!("lookup table {}: {e}", self.path.display()))?;
        Ok((m.modified().ok(), m.len()))
    }

    /// Read the file, whose status was `stamp`.
    fn load(&mut self, stamp: (Option<SystemTime>, u64)) -> Result<(), String> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| format!("lookup table {}: {e}", self.path.display()))?;
        let rows = match self.format {
            Format::JsonLines => json_rows(&text),
            Format::Csv => csv_rows(&text),
        }
        .map_err(|(line, e)| format!("lookup table {}:{line}: {e}", self.path.display()))?;
        let mut by_key: HashMap<String, (usize, Row)> = HashMap::with_capacity(rows.len());
        for (line, row) in rows {
            let k = match row.get(&self.key) {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                _ => {
                    return Err(format!(
                        "lookup table {}:{line}: no key column `{}` (a string or number)",
                        self.path.display(),
                        self.key
                    ));
                }
            };
            if let Some((first, _)) = by_key.get(&k) {
                return Err(format!(
                    "lookup table {}:{line}: key `{k}` again (first on line {first}); a lookup needs one row per key",
                    self.path.display()
                ));
            }
            by_key.insert(k, (line, row));
        }
        self.rows = by_key.into_iter().map(|(k, (_, r))| (k, r)).collect();
        self.loaded = Some(stamp);
        Ok(())
    }
}

/// (line number, row) of each JSON object line.
fn json_rows(text: &str) -> Result<Vec<(usize, Row)>, (usize, String)> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => rows.push((i + 1, m)),
            Ok(_) => return Err((i + 1, "not a JSON object".into())),
            Err(e) => return Err((i + 1, format!("not JSON: {e}"))),
        }
    }
    Ok(rows)
}

/// (line number, row) of each CSV record, columns named by the header.
fn csv_rows(text: &str) -> Result<Vec<(usize, Row)>, (usize, String)> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().map_err(|e| (1, e.to_string()))?.clone();
    let mut rows = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            (line, e.to_string())
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let row = header
            .iter()
            .zip(rec.iter())
            .map(|(h, v)| (h.to_string(), Value::String(v.to_string())))
            .collect();
        rows.push((line, row));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("weir-lookup-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn csv_and_json_tables_are_keyed_and_reloaded_when_changed() {
        let p = dir().join("users.csv");
        std::fs::write(&p, "user,country\nu1,FR\n\"u,2\",DE\n").unwrap();
        let mut t = Table::open(&p, "user").unwrap();
        assert_eq!(t.get("u,2").unwrap()["country"], "DE");
        assert!(!t.refresh().unwrap(), "unchanged");
        std::fs::write(&p, "user,country\nu1,FR\nu3,JP\nu4,IT\n").unwrap();
        assert!(t.refresh().unwrap());
        assert_eq!((t.len(), t.reloads()), (3, 1));
        assert!(t.get("u,2").is_none());
        let j = dir().join("prices.jsonl");
        std::fs::write(&j, "{\"sku\":7,\"price\":1.5}\n\n{\"sku\":\"a\"}\n").unwrap();
        let t = Table::open(&j, "sku").unwrap();
        assert_eq!(t.get("7").unwrap()["price"], 1.5);
        assert!(t.get("a").is_some());
    }

    #[test]
    fn bad_tables_are_refused_by_line_and_a_bad_reload_keeps_the_old_rows() {
        let p = dir().join("bad.jsonl");
        std::fs::write(&p, "{\"k\":1}\n{\"k\":1}\n").unwrap();
        let e = Table::open(&p, "k").unwrap_err();
        assert!(
            e.ends_with(
                "bad.jsonl:2: key `1` again (first on line 1); a lookup needs one row per key"
            ),
            "{e}"
        );
        std::fs::write(&p, "{\"k\":1}\n").unwrap();
        let mut t = Table::open(&p, "k").unwrap();
        std::fs::write(&p, "{\"k\":1}\n[2]\n").unwrap();
        let e = t.refresh().unwrap_err();
        assert!(e.ends_with("bad.jsonl:2: not a JSON object"), "{e}");
        assert!(t.get("1").is_some());
        std::fs::write(&p, "{\"j\":1}\n").unwrap();
        let e = t.refresh().unwrap_err();
        assert!(e.contains(":1: no key column `k`"), "{e}");
        let c = dir().join("bad.csv");
        std::fs::write(&c, "a,b\n1,2\n3\n").unwrap();
        let e = Table::open(&c, "a").unwrap_err();
        assert!(e.contains("bad.csv:3:"), "{e}");
    }
}
