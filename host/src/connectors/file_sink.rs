//! JSON-lines files, exactly once, like Spark's file sink: batch N is written
//! to `part-<N>.jsonl` (temp name, fsync, rename), then committed by
//! `_weir/manifest/<N>` listing its files. Readers see only files named in a
//! manifest ([`read_committed`]); a batch whose manifest exists is skipped on
//! replay, and a file left by a crash before its manifest is overwritten.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::checkpoint::write_atomic;
use crate::engine::{ConnectorError, Sink, SinkBatch, faults};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// One output value per line, as is.
    Values,
    /// One JSON object per line: key, value, headers, timestamp.
    Records,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub batch_id: u64,
    pub files: Vec<String>,
    pub records: u64,
}

pub struct FileSink {
    dir: PathBuf,
    format: FileFormat,
}

fn manifest_path(dir: &Path, batch_id: u64) -> PathBuf {
    dir.join("_weir")
        .join("manifest")
        .join(batch_id.to_string())
}

impl FileSink {
    pub fn new(dir: PathBuf, format: FileFormat) -> Self {
        FileSink { dir, format }
    }

    fn encode(&self, o: &crate::engine::OutputRef<'_>, buf: &mut Vec<u8>) {
        match self.format {
            FileFormat::Values => buf.extend_from_slice(o.value),
            FileFormat::Records => {
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                let headers: serde_json::Map<String, serde_json::Value> = o
                    .headers()
                    .map(|(k, v)| (k.to_string(), text(v).into()))
                    .collect();
                let rec = serde_json::json!({"key": o.key.map(text), "value": text(o.value), "headers": headers, "timestamp": o.timestamp});
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
