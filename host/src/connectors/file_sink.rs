//! JSON-lines files, exactly once, like Spark's file sink: batch N is written
//! to `part-<N>.jsonl` (temp name, fsync, rename), then committed by
//! `_weir/manifest/<N>` listing its files. Readers see only files named in a
//! manifest ([`read_committed`]); a batch whose manifest exists is skipped on
//! replay, and a file left by a crash before its manifest is overwritten.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::checkpoint::write_atomic;
use crate::engine::{ConnectorError, Sink, SinkBatch, faults};

pub use crate::spec::FileFormat;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub batch_id: u64,
    pub files: Vec<String>,
    pub records: u64,
    /// The query that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_id: Option<String>,
}

pub struct FileSink {
    dir: PathBuf,
    format: FileFormat,
    query_id: Option<String>,
}

fn manifest_path(dir: &Path, batch_id: u64) -> PathBuf {
    dir.join("_weir")
        .join("manifest")
        .join(batch_id.to_string())
}

impl FileSink {
    pub fn new(dir: PathBuf, format: FileFormat) -> Self {
        FileSink {
            dir,
            format,
            query_id: None,
        }
    }

    fn encode(&self, o: &crate::engine::OutputRef<'_>, buf: &mut Vec<u8>) {
        match self.format {
            // A record without a value writes an empty line here, as an
            // empty value does; `records` tells them apart (`null`).
            FileFormat::Values => buf.extend_from_slice(o.value),
            FileFormat::Records => {
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                let headers: serde_json::Map<String, serde_json::Value> = o
                    .headers()
                    .map(|(k, v)| (k.to_string(), text(v).into()))
                    .collect();
                let rec = serde_json::json!({"key": o.key.map(text), "value": o.value_opt().map(text), "headers": headers, "timestamp": o.timestamp});
                serde_json::to_writer(&mut *buf, &rec).expect("JSON to a Vec");
            }
        }
        buf.push(b'\n');
    }
}

impl Sink for FileSink {
    fn description(&self) -> String {
        format!("files:{}", self.dir.display())
    }

    /// Claim the directory for `query_id` (`_weir/query`). Batch ids are
    /// per query, so a second query writing here would have its batches
    /// taken for already-written ones and skipped: refuse it instead.
    fn open(&mut self, query_id: &str) -> Result<(), ConnectorError> {
        let io = |p: &Path, e: std::io::Error| ConnectorError(format!("{}: {e}", p.display()));
        let owner = self.dir.join("_weir").join("query");
        match std::fs::read_to_string(&owner) {
            Ok(id) if id.trim() == query_id => {}
            Ok(id) => {
                return Err(ConnectorError(format!(
                    "{} holds the output of another query (id {}); a new query (a new checkpoint) must write to a new directory",
                    self.dir.display(),
                    id.trim()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let manifests = self.dir.join("_weir").join("manifest");
                let used = std::fs::read_dir(&manifests).is_ok_and(|mut d| d.next().is_some());
                if used {
                    return Err(ConnectorError(format!(
                        "{} holds output of a query weir cannot identify (no _weir/query); write to a new directory",
                        self.dir.display()
                    )));
                }
                write_atomic(&owner, query_id.as_bytes()).map_err(|e| io(&owner, e))?;
            }
            Err(e) => return Err(io(&owner, e)),
        }
        self.query_id = Some(query_id.to_string());
        Ok(())
    }

    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let io = |p: &Path, e: std::io::Error| ConnectorError(format!("{}: {e}", p.display()));
        let manifest = manifest_path(&self.dir, batch_id);
        if manifest.exists() {
            return Ok(0);
        }
        let mut buf = Vec::new();
        let mut records = 0;
        for o in batch.records() {
            self.encode(&o, &mut buf);
            records += 1;
        }
        let mut files = Vec::new();
        if records > 0 {
            let name = format!("part-{batch_id:08}.jsonl");
            let path = self.dir.join(&name);
            write_atomic(&path, &buf).map_err(|e| io(&path, e))?;
            files.push(name);
        }
        faults::point("mid-sink", batch_id);
        let m = Manifest {
            batch_id,
            files,
            records,
            query_id: self.query_id.clone(),
        };
        write_atomic(&manifest, &serde_json::to_vec(&m).expect("manifest"))
            .map_err(|e| io(&manifest, e))?;
        Ok(records)
    }
}

/// The committed output of a file sink directory: every line of every file
/// named by a manifest, in batch order. This is the reading rule.
pub fn read_committed(dir: &Path) -> Result<Vec<Vec<u8>>, ConnectorError> {
    let mdir = dir.join("_weir").join("manifest");
    let mut ids: Vec<u64> = match std::fs::read_dir(&mdir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(ConnectorError(format!("{}: {e}", mdir.display()))),
    };
    ids.sort_unstable();
    let mut lines = Vec::new();
    for id in ids {
        let path = mdir.join(id.to_string());
        let bytes =
            std::fs::read(&path).map_err(|e| ConnectorError(format!("{}: {e}", path.display())))?;
        let m: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| ConnectorError(format!("{}: corrupt manifest: {e}", path.display())))?;
        for f in m.files {
            let p = dir.join(&f);
            let data = std::fs::read(&p).map_err(|e| {
                ConnectorError(format!(
                    "{}: listed in manifest {id} but unreadable: {e}",
                    p.display()
                ))
            })?;
            lines.extend(
                data.split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_belongs_to_one_query() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
        a.open("query-a").unwrap();
        a.open("query-a").unwrap();
        let mut b = FileSink::new(dir.path().to_path_buf(), FileFormat::Values);
        let err = b.open("query-b").unwrap_err().to_string();
        assert!(
            err.contains("holds the output of another query (id query-a)"),
            "{err}"
        );
        // A directory with manifests but no owner is not adopted either.
        std::fs::remove_file(dir.path().join("_weir/query")).unwrap();
        write_atomic(&manifest_path(dir.path(), 0), b"{}").unwrap();
        let err = b.open("query-b").unwrap_err().to_string();
        assert!(err.contains("cannot identify"), "{err}");
    }
}
