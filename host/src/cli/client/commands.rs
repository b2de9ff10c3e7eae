//! Each client command: build the request, print the answer for a person.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::Value;

use super::{Body, Server};

#[derive(clap::Args)]
pub struct DeployArgs {
    /// The pipeline file. Its `[transform] component` is uploaded when it
    /// names a file (relative to the pipeline file); an id is used as is.
    pipeline: PathBuf,
    /// The pipeline's name (default: its `name`, else the file's stem).
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    server: Server,
}

#[derive(clap::Args)]
pub struct LsArgs {
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    server: Server,
}

#[derive(clap::Args)]
pub struct LogsArgs {
    name: String,
    /// Keep printing new lines as the guests write them.
    #[arg(short, long)]
    follow: bool,
    /// How many of the last lines to print first.
    #[arg(long, default_value_t = 100)]
    tail: usize,
    #[command(flatten)]
    server: Server,
}

#[derive(clap::Args)]
pub struct NameArgs {
    name: String,
    #[command(flatten)]
    server: Server,
}

#[derive(clap::Args)]
pub struct RmArgs {
    name: String,
    /// Also delete its checkpoint.
    #[arg(long)]
    purge: bool,
    #[command(flatten)]
    server: Server,
}

#[derive(clap::Args)]
pub struct ComponentsArgs {
    #[command(flatten)]
    server: Server,
}

/// A component reference that is already an id, not a file.
fn is_id(s: &str) -> bool {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

pub fn deploy(a: DeployArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&a.pipeline)
        .with_context(|| format!("reading {}", a.pipeline.display()))?;
    let mut table: toml::Table = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", a.pipeline.display(), e.message()))?;
    let spec_name = table
        .remove("name")
        .and_then(|v| v.as_str().map(str::to_string));
    let name = a
        .name
        .or(spec_name)
        .or_else(|| Some(a.pipeline.file_stem()?.to_str()?.to_string()))
        .context("give the pipeline a name with --name")?;
    let component = table
        .get("transform")
        .and_then(|t| t.get("component"))
        .and_then(|c| c.as_str())
        .map(str::to_string)
        .context("the pipeline has no [transform] component")?;
    let id = if is_id(&component) {
        component.trim_start_matches("sha256:").to_string()
    } else {
        let base = a.pipeline.parent().unwrap_or(std::path::Path::new("."));
        let path = base.join(&component);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let c = a
            .server
            .call("POST", "/v1/components", Some(Body::Bytes(&bytes)))?
            .json()?;
        c["id"]
            .as_str()
            .context("the server gave no component id")?
            .to_string()
    };
    if let Some(toml::Value::Table(t)) = table.get_mut("transform") {
        t.insert("component".into(), id.clone().into());
    }
    let body = toml::to_string(&table)?;
    let answer = a.server.call(
        "PUT",
        &format!("/v1/pipelines/{name}"),
        Some(Body::Text(&body)),
    )?;
    let v = answer.json()?;
    let verb = if answer.status == 201 {
        "deployed"
    } else {
        "replaced"
    };
    println!(
        "{verb} {name}: component sha256:{}, {}",
        &id[..12.min(id.len())],
        v["state"].as_str().unwrap_or("?")
    );
    Ok(ExitCode::SUCCESS)
}

fn rate(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |r| format!("{r:.0}"))
}

pub fn ls(a: LsArgs) -> anyhow::Result<ExitCode> {
    let list = a.server.call("GET", "/v1/pipelines", None)?.json()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows = list
        .as_array()
        .context("the server's list is not an array")?;
    println!(
        "{:<24} {:<11} {:>10} {:>10} {:>8} {:>8}  LAST ERROR",
        "NAME", "STATE", "IN/S", "DONE/S", "LAG", "RESTARTS"
    );
    for p in rows {
        println!(
            "{:<24} {:<11} {:>10} {:>10} {:>8} {:>8}  {}",
            p["name"].as_str().unwrap_or("?"),
            p["state"].as_str().unwrap_or("?"),
            rate(&p["input-rows-per-second"]),
            rate(&p["processed-rows-per-second"]),
            p["lag"].as_u64().map_or("-".into(), |l| l.to_string()),
            p["restarts"].as_u64().unwrap_or(0),
            p["last-error"].as_str().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_line(l: &Value) {
    println!(
        "{} {:<5} {}: {}",
        l["time"].as_str().unwrap_or(""),
        l["level"].as_str().unwrap_or(""),
        l["guest"].as_str().unwrap_or(""),
        l["message"].as_str().unwrap_or("")
    );
}

pub fn logs(a: LogsArgs) -> anyhow::Result<ExitCode> {
    let path = format!("/v1/pipelines/{}/logs?tail={}", a.name, a.tail);
    if !a.follow {
        let lines = a.server.call("GET", &path, None)?.json()?;
        for l in lines.as_array().into_iter().flatten() {
            print_line(l);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut event = String::new();
    for line in a.server.stream(&format!("{path}&follow=true"))?.lines() {
        let line = line.context("reading the log stream")?;
        if let Some(kind) = line.strip_prefix("event:") {
            event = kind.trim().to_string();
        } else if let Some(data) = line.strip_prefix("data:") {
            if event == "skipped" {
                eprintln!("weir: {}", data.trim());
            } else if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                print_line(&v);
            }
        } else if line.is_empty() {
            event.clear();
        }
    }
    bail!("the server closed the log stream (the pipeline was deleted, or the server stopped)")
}

pub fn stop(a: NameArgs) -> anyhow::Result<ExitCode> {
    let v = a
        .server
        .call("POST", &format!("/v1/pipelines/{}/stop", a.name), None)?
        .json()?;
    println!("{}: {}", a.name, v["state"].as_str().unwrap_or("?"));
    Ok(ExitCode::SUCCESS)
}

pub fn start(a: NameArgs) -> anyhow::Result<ExitCode> {
    let v = a
        .server
        .call("POST", &format!("/v1/pipelines/{}/start", a.name), None)?
        .json()?;
    println!("{}: {}", a.name, v["state"].as_str().unwrap_or("?"));
    Ok(ExitCode::SUCCESS)
}

pub fn rm(a: RmArgs) -> anyhow::Result<ExitCode> {
    let q = if a.purge { "?purge=true" } else { "" };
    a.server
        .call("DELETE", &format!("/v1/pipelines/{}{q}", a.name), None)?;
    println!(
        "{}: deleted{}",
        a.name,
        if a.purge { " with its checkpoint" } else { "" }
    );
    Ok(ExitCode::SUCCESS)
}

pub fn components(a: ComponentsArgs) -> anyhow::Result<ExitCode> {
    let list = a.server.call("GET", "/v1/components", None)?.json()?;
    println!("{:<66} {:>10}  WORLD", "ID", "SIZE");
    for c in list.as_array().into_iter().flatten() {
        println!(
            "{:<66} {:>10}  {}",
            c["id"].as_str().unwrap_or("?"),
            c["size"].as_u64().unwrap_or(0),
            c["world"].as_str().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}
