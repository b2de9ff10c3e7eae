//! `weir status CHECKPOINT_DIR` and `weir files DIR`.

use std::io::Write;
use std::path::PathBuf;

use weir_engine::durable::read_entry;
use weir_engine::wal::{self, Metadata, Resume};
use weir_engine::{LocalCheckpointStore, Progress};

pub fn status(dir: PathBuf) -> anyhow::Result<()> {
    if !dir.join("metadata").exists() {
        anyhow::bail!(
            "{}: not a weir checkpoint (no metadata file)",
            dir.display()
        );
    }
    let store = LocalCheckpointStore::open(&dir)?;
    let meta: Metadata = read_entry(&store, "metadata")?.expect("checked above");
    println!("query id:   {}", meta.id);
    println!("mode:       {}", meta.mode);
    println!("sources:    {}", meta.sources.join(", "));
    match wal::resume(&store)? {
        Resume::Fresh => println!("position:   no batch yet"),
        Resume::Continue {
            next_batch,
            start,
            watermark,
        } => {
            println!(
                "committed:  batch {} (next batch {next_batch} starts at {})",
                next_batch - 1,
                serde_json::to_string(&start)?
            );
            if let Some(w) = watermark.watermark_ms {
                println!("watermark:  {} ({w})", weir_engine::state::iso(w));
            }
        }
        Resume::Rerun(e) => println!(
            "pending:    batch {} planned but not committed; it re-runs over {} on restart",
            e.batch_id,
            serde_json::to_string(&e.sources)?
        ),
    }
    if let Some(p) = read_entry::<Progress>(&store, "progress")? {
        println!("last batch: {}", p.status_line());
        println!("{}", serde_json::to_string_pretty(&p)?);
    }
    Ok(())
}

pub fn files(dir: PathBuf) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in weir_connectors::file_sink::read_committed(&dir)? {
        out.write_all(&line)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
