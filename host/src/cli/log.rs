//! `weir log`: create, append to and read topics of the embedded log.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use weir_engine::RecordBatch;
use weir_log::{Fetched, Topic, UncommittedReader};

/// Lines committed per append.
const CHUNK: usize = 10_000;

#[derive(clap::Subcommand)]
pub enum LogCommand {
    /// Create a topic.
    Create {
        /// Directory holding the log's topics.
        root: PathBuf,
        topic: String,
        #[arg(short, long, default_value_t = 1)]
        partitions: u32,
    },
    /// Append stdin lines as records (one commit per 10,000 lines).
    Append {
        root: PathBuf,
        topic: String,
        /// Take each record's key from this top-level field of a JSON line
        /// (records with the same key go to the same partition).
        #[arg(long, value_name = "FIELD")]
        key_field: Option<String>,
    },
    /// Print committed records (values, or whole records with --json).
    Read {
        root: PathBuf,
        topic: String,
        /// Keep printing new records as they are committed.
        #[arg(short, long)]
        follow: bool,
        #[arg(long)]
        json: bool,
        /// `read-uncommitted` also prints records not committed yet (from a
        /// sink with write = "as-produced"); when such records are cut, a
        /// line on stderr says from which offset the printed ones are void.
        #[arg(long, value_enum, default_value_t = Isolation::ReadCommitted)]
        isolation: Isolation,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Isolation {
    ReadCommitted,
    ReadUncommitted,
}

pub fn run(cmd: LogCommand) -> anyhow::Result<()> {
    match cmd {
        LogCommand::Create {
            root,
            topic,
            partitions,
        } => {
            Topic::create(&root, &topic, partitions)?;
            eprintln!(
                "created topic {topic} with {partitions} partition(s) in {}",
                root.display()
            );
            Ok(())
        }
        LogCommand::Append {
            root,
            topic,
            key_field,
        } => append(root, &topic, key_field.as_deref()),
        LogCommand::Read {
            root,
            topic,
            follow,
            json,
            isolation: Isolation::ReadCommitted,
        } => read(root, &topic, follow, json),
        LogCommand::Read {
            root,
            topic,
            follow,
            json,
            isolation: Isolation::ReadUncommitted,
        } => read_uncommitted(root, &topic, follow, json),
    }
}

fn key_of(line: &[u8], field: &str, line_no: usize) -> anyhow::Result<Vec<u8>> {
    let doc: serde_json::Value = serde_json::from_slice(line)
        .with_context(|| format!("stdin line {line_no}: not JSON, so --key-field cannot apply"))?;
    match doc.get(field) {
        Some(serde_json::Value::String(s)) => Ok(s.clone().into_bytes()),
        Some(v) => Ok(v.to_string().into_bytes()),
        None => anyhow::bail!("stdin line {line_no}: no field `{field}` for the key"),
    }
}

fn append(root: PathBuf, topic: &str, key_field: Option<&str>) -> anyhow::Result<()> {
    let mut t = Topic::open(&root, topic)?;
    let n = t.partition_count();
    let mut parts: Vec<RecordBatch> = (0..n).map(RecordBatch::new).collect();
    let (mut pending, mut total, mut rr) = (0usize, 0usize, 0u32);
    for (i, line) in std::io::stdin().lock().split(b'\n').enumerate() {
        let mut line = line.context("reading stdin")?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let key = key_field.map(|f| key_of(&line, f, i + 1)).transpose()?;
        let p = match &key {
            Some(k) => t.partition_for(k),
            None => {
                rr = (rr + 1) % n;
                rr
            }
        };
        parts[p as usize].push(key.as_deref(), &line, now, 0);
        pending += 1;
        if pending == CHUNK {
            t.append(None, &parts, || {})?;
            parts.iter_mut().for_each(RecordBatch::clear);
            total += pending;
            pending = 0;
        }
    }
    if pending > 0 {
        t.append(None, &parts, || {})?;
        total += pending;
    }
    eprintln!("appended {total} record(s) to {topic}");
    Ok(())
}

fn read(root: PathBuf, topic: &str, follow: bool, json: bool) -> anyhow::Result<()> {
    let mut t = Topic::open(&root, topic)?;
    let mut pos = vec![0u64; t.partition_count() as usize];
    let mut out = BufWriter::new(std::io::stdout().lock());
    loop {
        let ends = t.committed_ends()?;
        for (p, end) in ends.iter().enumerate() {
            if *end <= pos[p] {
                continue;
            }
            let mut b = RecordBatch::new(p as u32);
            t.read(p as u32, pos[p], *end, &mut b)?;
            print_records(&mut out, &b, json)?;
            pos[p] = *end;
        }
        out.flush()?;
        if !follow {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn print_records(out: &mut impl Write, b: &RecordBatch, json: bool) -> anyhow::Result<()> {
    for r in b.iter() {
        if json {
            let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
            let headers: serde_json::Map<_, _> = r
                .headers()
                .map(|(k, v)| (k.to_string(), text(v).into()))
                .collect();
            let rec = serde_json::json!({"partition": b.partition, "offset": r.offset, "key": r.key.map(text), "value": r.value_opt().map(text), "headers": headers, "timestamp": r.timestamp});
            writeln!(out, "{rec}")?;
        } else {
            out.write_all(r.value)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Records as soon as they are written; a cut is reported on stderr.
fn read_uncommitted(root: PathBuf, topic: &str, follow: bool, json: bool) -> anyhow::Result<()> {
    let t = Topic::open(&root, topic)?;
    let n = t.partition_count();
    let mut reader = UncommittedReader::new(t, vec![0; n as usize])?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    loop {
        let mut any = false;
        for p in 0..n {
            match reader.fetch(p, CHUNK)? {
                Fetched::Records(b) => {
                    any |= !b.is_empty();
                    print_records(&mut out, &b, json)?;
                }
                Fetched::Rewound(to) => {
                    out.flush()?;
                    eprintln!(
                        "weir log read: partition {p}: records from offset {to} on were not committed and are cut; reading again from {to}"
                    );
                    any = true;
                }
            }
        }
        out.flush()?;
        if !any {
            if !follow {
                return Ok(());
            }
            reader.wait(Duration::from_millis(500));
        }
    }
}
