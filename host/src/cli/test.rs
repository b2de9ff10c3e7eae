//! `weir test GUEST.wasm --input [NAME=]FILE... [--expect FILE]`: run a guest over
//! sample records as a real pipeline would (files source, the guard and its
//! limits, keyed state, event time and the final watermark of an
//! `available-now` run, so windows fire), print what came out and what was
//! refused, and compare with the expectation. The pipeline is built by the
//! library from a spec, in a temporary directory, exactly as `weir run`
//! builds one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::Value;
use weir_pipeline::build_query;
use weir_pipeline::spec::Pipeline;
use weir_runtime::Runtime;

#[derive(clap::Args)]
pub struct Args {
    /// The guest component.
    guest: PathBuf,
    /// Sample records, one per line; `NAME=FILE` (repeatable) makes a
    /// source named NAME, as a join reads two.
    #[arg(long, value_name = "[NAME=]FILE", required = true, value_parser = parse_input)]
    input: Vec<Input>,
    /// Expected output lines, as this command prints them; exits 1 when the
    /// output differs.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Compare in order (default: as a multiset, since keyed guests emit in
    /// state-partition order).
    #[arg(long)]
    ordered: bool,
    /// How input lines are read: "raw" (every line a record) or "json"
    /// (JSON lines; blank lines skipped).
    #[arg(long, default_value = "raw")]
    format: String,
    /// A transform config pair (repeatable).
    #[arg(short, long = "config", value_name = "KEY=VALUE", value_parser = super::parse_pair)]
    config: Vec<(String, String)>,
    /// Allow an extra imported interface (repeatable), as a pipeline's `grants`.
    #[arg(long = "grant", value_name = "INTERFACE")]
    grants: Vec<String>,
    /// Call the guest once per record instead of once per batch.
    #[arg(long)]
    per_record: bool,
    /// JSON field keying state (stateful guests need one).
    #[arg(long, value_name = "FIELD")]
    key_field: Option<String>,
    /// JSON field with each record's event time (epoch ms or RFC 3339).
    #[arg(long, value_name = "FIELD")]
    event_time: Option<String>,
    /// Watermark delay, e.g. "1s".
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    delay: String,
    /// A stateful guest's output mode: append, update or complete.
    #[arg(long)]
    output_mode: Option<String>,
    /// A `[transform.limits]` setting (repeatable), e.g. `memory=64MiB`,
    /// `call-timeout=50ms`, `fuel=1000000`.
    #[arg(long = "limit", value_name = "KEY=VALUE", value_parser = super::parse_pair)]
    limits: Vec<(String, String)>,
    /// A named output the guest routes to (repeatable); its records print
    /// as `[NAME] value`.
    #[arg(long = "output", value_name = "NAME")]
    outputs: Vec<String>,
    /// Print whole output records as JSON (output, key, value, headers, timestamp).
    #[arg(long)]
    json: bool,
}

/// One `--input`: a sample file, and the name of the source it feeds.
#[derive(Clone)]
struct Input {
    source: Option<String>,
    file: PathBuf,
}

fn parse_input(s: &str) -> Result<Input, String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => Ok(Input {
            source: Some(name.to_string()),
            file: file.into(),
        }),
        Some(_) => Err(format!("expected FILE or NAME=FILE, got `{s}`")),
        None => Ok(Input {
            source: None,
            file: s.into(),
        }),
    }
}

/// The directory under `in/` holding an input's records.
fn input_dir(input: &Input) -> String {
    match &input.source {
        Some(name) => format!("in/{name}"),
        None => "in/default".to_string(),
    }
}

fn spec(a: &Args, dir: &Path) -> anyhow::Result<String> {
    use toml::Value as T;
    let path = |p: &str| T::String(dir.join(p).display().to_string());
    let mut t = toml::Table::new();
    t.insert("name".into(), "weir-test".into());
    t.insert("checkpoint".into(), path("checkpoint"));
    let sources = a
        .input
        .iter()
        .map(|input| {
            let mut source = toml::Table::new();
            if let Some(name) = &input.source {
                source.insert("name".into(), name.clone().into());
            }
            source.insert("type".into(), "files".into());
            source.insert("path".into(), path(&input_dir(input)));
            source.insert("format".into(), a.format.clone().into());
            T::Table(source)
        })
        .collect();
    t.insert("source".into(), T::Array(sources));
    let mut transform = toml::Table::new();
    let guest =
        std::fs::canonicalize(&a.guest).with_context(|| format!("{}", a.guest.display()))?;
    transform.insert("component".into(), guest.display().to_string().into());
    transform.insert("on-error".into(), "dead-letter".into());
    if a.per_record {
        transform.insert("call".into(), "record".into());
    }
    let config: toml::Table = a
        .config
        .iter()
        .map(|(k, v)| (k.clone(), T::String(v.clone())))
        .collect();
    transform.insert("config".into(), T::Table(config));
    let grants = a.grants.iter().map(|g| T::String(g.clone())).collect();
    transform.insert("grants".into(), T::Array(grants));
    let limits = weir_pipeline::spec::limits_table(&a.limits);
    transform.insert("limits".into(), T::Table(limits));
    t.insert("transform".into(), T::Table(transform));
    let files = |dir_name: &str, format: &str| {
        let mut s = toml::Table::new();
        s.insert("type".into(), "files".into());
        s.insert("path".into(), path(dir_name));
        s.insert("format".into(), format.into());
        T::Table(s)
    };
    let mut sinks = toml::Table::new();
    sinks.insert("default".into(), files("out/default", "records"));
    sinks.insert("dead-letter".into(), files("dead", "values"));
    for o in &a.outputs {
        sinks.insert(o.clone(), files(&format!("out/{o}"), "records"));
    }
    t.insert("sink".into(), T::Table(sinks));
    let mut trigger = toml::Table::new();
    trigger.insert("type".into(), "available-now".into());
    t.insert("trigger".into(), T::Table(trigger));
    if let Some(k) = &a.key_field {
        let mut s = toml::Table::new();
        s.insert("key-field".into(), k.clone().into());
        t.insert("state".into(), T::Table(s));
    }
    if let Some(f) = &a.event_time {
        let mut e = toml::Table::new();
        e.insert("field".into(), f.clone().into());
        e.insert("delay".into(), a.delay.clone().into());
        t.insert("event-time".into(), T::Table(e));
    }
    if let Some(m) = &a.output_mode {
        t.insert("output-mode".into(), m.clone().into());
    }
    Ok(toml::to_string(&t)?)
}

/// One printed line per committed output record of `name`'s sink.
fn printed(dir: &Path, name: &str, json: bool) -> anyhow::Result<Vec<String>> {
    let lines = weir_connectors::file_sink::read_committed(&dir.join("out").join(name))?;
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        let mut rec: Value = serde_json::from_slice(&l).context("reading the output back")?;
        let line = if json {
            if name != "default" {
                rec["output"] = name.into();
            }
            rec.to_string()
        } else {
            let v = rec["value"].as_str().unwrap_or_default().to_string();
            if name == "default" {
                v
            } else {
                format!("[{name}] {v}")
            }
        };
        out.push(line);
    }
    Ok(out)
}

pub fn run(runtime: &Runtime, a: Args) -> anyhow::Result<ExitCode> {
    // A pipeline needs a key for keyed state; here the flag gives it.
    // (Loading is cached: the build below loads the compiled component.)
    if a.key_field.is_none() && runtime.load(&a.guest, &a.grants)?.info().stateful {
        bail!(
            "{} keeps keyed state, so its records need a key: give --key-field FIELD",
            a.guest.display()
        );
    }
    if a.input.len() > 1 && a.input.iter().any(|i| i.source.is_none()) {
        bail!("with more than one --input, name each one's source: --input NAME=FILE");
    }
    let dir = tempfile::tempdir()?;
    for input in &a.input {
        let to = dir.path().join(input_dir(input));
        std::fs::create_dir_all(&to)?;
        std::fs::copy(&input.file, to.join("input"))
            .with_context(|| format!("{}", input.file.display()))?;
    }
    let text = spec(&a, dir.path())?;
    let spec = Pipeline::parse(&text, "weir test", dir.path())
        .map_err(|e| anyhow::anyhow!("{} (from the options given to weir test)", e.message))?;
    let mut query = build_query(runtime, &spec, Default::default(), None, false)?;
    // Sample input is all there is: windows still open at its end fire.
    query.flush_event_time_at_end();
    query.run(&mut |_| {})?;
    let mut got = printed(dir.path(), "default", a.json)?;
    for o in &a.outputs {
        got.extend(printed(dir.path(), o, a.json)?);
    }
    for line in &got {
        println!("{line}");
    }
    let dead = weir_connectors::file_sink::read_committed(&dir.path().join("dead"))?;
    for d in &dead {
        let v: Value = serde_json::from_slice(d).unwrap_or_default();
        // Named inputs say which file the line is in.
        let input = match v["source"]["name"].as_str() {
            Some(name) if a.input.iter().any(|i| i.source.as_deref() == Some(name)) => {
                format!("{name} ")
            }
            _ => String::new(),
        };
        eprintln!(
            "{input}line {}: {}: {}",
            v["source"]["offset"],
            v["error"]["kind"].as_str().unwrap_or("?"),
            v["error"]["message"].as_str().unwrap_or("?")
        );
    }
    if !dead.is_empty() {
        eprintln!("{} record(s) rejected", dead.len());
    }
    let Some(expect) = &a.expect else {
        return Ok(ExitCode::SUCCESS);
    };
    let text = std::fs::read_to_string(expect).with_context(|| format!("{}", expect.display()))?;
    let mut want: Vec<String> = text.lines().map(str::to_string).collect();
    if !a.ordered {
        want.sort();
        got.sort();
    }
    if want == got {
        eprintln!("ok: {} output record(s) as expected", got.len());
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "differs from {}: expected {} line(s), got {}",
        expect.display(),
        want.len(),
        got.len()
    );
    diff(&want, &got, a.ordered);
    Ok(ExitCode::FAILURE)
}

/// The first differences: by position when ordered, else the lines only
/// one side has.
fn diff(want: &[String], got: &[String], ordered: bool) {
    if ordered {
        for (i, (w, g)) in want
            .iter()
            .zip(got)
            .enumerate()
            .filter(|(_, (w, g))| w != g)
            .take(10)
        {
            eprintln!("line {}: expected {w:?}, got {g:?}", i + 1);
        }
        return;
    }
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < want.len() || j < got.len() {
        match (want.get(i), got.get(j)) {
            (Some(w), Some(g)) if w == g => (i, j) = (i + 1, j + 1),
            (Some(w), Some(g)) if w < g => (missing.push(w), i += 1).1,
            (Some(w), None) => (missing.push(w), i += 1).1,
            (_, Some(g)) => (extra.push(g), j += 1).1,
            (None, None) => break,
        }
    }
    for m in missing.iter().take(10) {
        eprintln!("- {m}");
    }
    for e in extra.iter().take(10) {
        eprintln!("+ {e}");
    }
}
