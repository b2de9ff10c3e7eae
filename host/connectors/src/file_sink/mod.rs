//! JSON-lines files, exactly once, like Spark's file sink: batch N is written
//! to `part-<N>.jsonl`, or as `part-<N>-<k>.jsonl` when its pieces are
//! written on several cores (each temp name, fsync, rename), then committed
//! by `_weir/manifest/<N>` listing its files. Readers see only files named in
//! a manifest ([`read_committed`]); a batch whose manifest exists is skipped
//! on replay, and files left by a crash before their manifest are removed
//! when the query restarts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use std::io::Write;

use weir_engine::durable::{sync_dir, write_atomic, write_renamed};
use weir_engine::parallel::Workers;
use weir_engine::{ConnectorError, RecordBatch, Sink, SinkBatch, TransformOutput, faults};

/// How a file sink writes records.
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
    /// The query that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_id: Option<String>,
}

pub struct FileSink {
    dir: PathBuf,
    format: FileFormat,
    query_id: Option<String>,
    /// The query's threads (micro-batch mode): a batch is written as one
    /// file per thread, in parallel, since encoding, copying to the page
    /// cache and fsync are most of a sink's time. Without them (continuous
    /// epochs, which are small) a batch is one file.
    workers: Option<Arc<Workers>>,
    /// Whether this run still has to remove what a crashed one left.
    strays_checked: bool,
}

fn io(p: &Path, e: std::io::Error) -> ConnectorError {
    ConnectorError(format!("{}: {e}", p.display()))
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
            workers: None,
            strays_checked: false,
        }
    }

    /// Part files of batch `from` and later without a manifest, and temp
    /// files: what a run that crashed mid-batch left. A re-run may cut the
    /// batch into a different number of files, so they are not all
    /// overwritten.
    fn remove_strays(&self, from: u64) -> Result<(), ConnectorError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io(&self.dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stray = if name.starts_with(".tmp") {
                true
            } else {
                part_batch(name)
                    .is_some_and(|id| id >= from && !manifest_path(&self.dir, id).exists())
            };
            if stray {
                let path = entry.path();
                std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
            }
        }
        Ok(())
    }

    /// Encode `parts` and write them durably (without the directory's
    /// fsync) as `name`; `None` when none of their records is for `route`.
    fn write_part(
        &self,
        name: String,
        parts: &[(RecordBatch, TransformOutput)],
        route: Option<&str>,
    ) -> Result<Option<(String, u64)>, ConnectorError> {
        // Written in 1 MiB pieces: a buffer of the whole part would be a
        // second copy of the batch's output, in memory touched afresh.
        const PIECE: usize = 1 << 20;
        let batch = SinkBatch { parts, route };
        let mut out = batch.records().peekable();
        if out.peek().is_none() {
            return Ok(None);
        }
        let path = self.dir.join(&name);
        let mut records = 0;
        write_renamed(&path, |f| {
            let mut buf = Vec::with_capacity(2 * PIECE);
            for o in out {
                self.encode(&o, &mut buf);
                records += 1;
                if buf.len() >= PIECE {
                    f.write_all(&buf)?;
                    buf.clear();
                }
            }
            f.write_all(&buf)
        })
        .map_err(|e| io(&path, e))?;
        Ok(Some((name, records)))
    }

    fn encode(&self, o: &weir_engine::OutputRef<'_>, buf: &mut Vec<u8>) {
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

    /// Each batch's committed lines, by its manifest (one query writes a
    /// directory, so `query_id` needs no checking here).
    fn read_back(
        &mut self,
        _query_id: &str,
        batches: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<std::collections::BTreeMap<u64, Vec<String>>>, ConnectorError> {
        let mut out = std::collections::BTreeMap::new();
        for n in batches {
            let lines = read_batch(&self.dir, n)?.unwrap_or_default();
            let text = |l: Vec<u8>| String::from_utf8_lossy(&l).into_owned();
            out.insert(n, lines.into_iter().map(text).collect());
        }
        Ok(Some(out))
    }

    /// Claim the directory for `query_id` (`_weir/query`). Batch ids are
    /// per query, so a second query writing here would have its batches
    /// taken for already-written ones and skipped: refuse it instead.
    fn open(&mut self, query_id: &str) -> Result<(), ConnectorError> {
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

    fn use_workers(&mut self, workers: Arc<Workers>) {
        self.workers = Some(workers);
    }

    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let manifest = manifest_path(&self.dir, batch_id);
        if manifest.exists() {
            return Ok(0);
        }
        if !self.strays_checked {
            self.remove_strays(batch_id)?;
            self.strays_checked = true;
        }
        weir_engine::durable::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        // Consecutive pieces per file, so the files in manifest order hold
        // the records in batch order.
        let threads = self.workers.as_ref().map_or(1, |w| w.threads());
        let per = batch.parts.len().div_ceil(threads).max(1);
        let groups: Vec<_> = batch.parts.chunks(per).enumerate().collect();
        let single = groups.len() == 1;
        let write = |(k, parts): (usize, &[_])| {
            let name = if single {
                format!("part-{batch_id:08}.jsonl")
            } else {
                format!("part-{batch_id:08}-{k:03}.jsonl")
            };
            self.write_part(name, parts, batch.route)
        };
        let written: Vec<_> = match &self.workers {
            Some(w) => w.map(groups, write),
            None => groups.into_iter().map(write).collect(),
        };
        let mut files = Vec::new();
        let mut records = 0;
        for w in written {
            if let Some((name, n)) = w? {
                files.push(name);
                records += n;
            }
        }
        if !files.is_empty() {
            sync_dir(&self.dir).map_err(|e| io(&self.dir, e))?;
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

/// The batch id of a part file's name (`part-<N>.jsonl`, `part-<N>-<k>.jsonl`).
fn part_batch(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("part-")?.strip_suffix(".jsonl")?;
    rest.split('-').next()?.parse().ok()
}

/// The lines batch `batch_id` committed, in its files' order; `None` when
/// no manifest names the batch.
pub fn read_batch(dir: &Path, batch_id: u64) -> Result<Option<Vec<Vec<u8>>>, ConnectorError> {
    let path = manifest_path(dir, batch_id);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&path, e)),
    };
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| ConnectorError(format!("{}: corrupt manifest: {e}", path.display())))?;
    let mut lines = Vec::new();
    for f in &m.files {
        lines.extend(manifest_file_lines(dir, f, batch_id)?);
    }
    Ok(Some(lines))
}

fn manifest_file_lines(dir: &Path, f: &str, id: u64) -> Result<Vec<Vec<u8>>, ConnectorError> {
    let p = dir.join(f);
    let data = std::fs::read(&p).map_err(|e| {
        ConnectorError(format!(
            "{}: listed in manifest {id} but unreadable: {e}",
            p.display()
        ))
    })?;
    Ok(data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
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
        lines.extend(read_batch(dir, id)?.unwrap_or_default());
    }
    Ok(lines)
}

#[cfg(test)]
mod tests;
