//! Host files: several tenants' pipelines in one process (`weir host`).
//!
//! ```toml
//! root = "weir-data"             # <root>/tenants/<tenant>/{checkpoints/<pipeline>/, weir.log}
//! [tenants.acme]
//! max-pipelines = 4              # default 10
//! max-memory = "1GiB"            # all of the tenant's guest instances together (default 1 GiB)
//! cpu-weight = 2                 # share of the cores under contention (default 1)
//! [[pipelines]]
//! tenant = "acme"
//! file = "pipelines/orders.toml"
//! ```
//!
//! A pipeline's own `checkpoint` is replaced by its tenant's root, so no
//! tenant can point at another's checkpoints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use weir_connectors::checkpoints::CheckpointLocation;

use serde::Deserialize;

use super::units::{key_location, parse_size};
use super::{Pipeline, SpecError};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawHost {
    root: String,
    cores: Option<usize>,
    #[serde(default)]
    tenants: BTreeMap<String, RawTenant>,
    #[serde(default)]
    pipelines: Vec<RawHostPipeline>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawTenant {
    max_pipelines: Option<usize>,
    max_memory: Option<String>,
    cpu_weight: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawHostPipeline {
    tenant: String,
    file: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TenantSpec {
    pub name: String,
    pub max_pipelines: usize,
    /// Bytes of linear memory all of the tenant's guest instances may hold.
    pub max_memory: usize,
    pub cpu_weight: u32,
    /// `<root>/tenants/<name>`: its checkpoints and its log.
    pub dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    pub root: PathBuf,
    /// Cores the CPU shares divide (default: the machine's).
    pub cores: Option<usize>,
    pub tenants: Vec<TenantSpec>,
    /// (tenant index, pipeline with its checkpoint under the tenant's root).
    pub pipelines: Vec<(usize, Pipeline)>,
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

impl HostSpec {
    pub fn load(path: &Path) -> Result<HostSpec, SpecError> {
        let file = path.display().to_string();
        let err = |location, message: String| SpecError {
            file: file.clone(),
            location,
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err(None, format!("cannot read: {e}")))?;
        let raw: RawHost = toml::from_str(&text).map_err(|e| {
            let message = e.message().trim().replace('\n', " ");
            let location = e.span().map(|s| key_location(&text, s.start, &message));
            err(location, message)
        })?;
        let base = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let base = std::fs::canonicalize(base)
            .map_err(|e| err(None, format!("cannot resolve its directory: {e}")))?;
        validate(raw, &base).map_err(|m| err(None, m))
    }
}

fn validate(raw: RawHost, base: &Path) -> Result<HostSpec, String> {
    let root = base.join(&raw.root);
    if raw.cores == Some(0) {
        return Err("cores must be at least 1".into());
    }
    let mut tenants = Vec::new();
    for (name, t) in raw.tenants {
        if !valid_name(&name) {
            return Err(format!(
                "tenants.{name}: a tenant name is 1-64 of a-z, 0-9, '-', '_' (it names directories)"
            ));
        }
        let max_memory = match &t.max_memory {
            None => 1 << 30,
            Some(s) => parse_size(s).map_err(|e| format!("tenants.{name}.max-memory: {e}"))?,
        };
        if t.cpu_weight == Some(0) || t.max_pipelines == Some(0) {
            return Err(format!(
                "tenants.{name}: cpu-weight and max-pipelines must be at least 1"
            ));
        }
        tenants.push(TenantSpec {
            dir: root.join("tenants").join(&name),
            name,
            max_pipelines: t.max_pipelines.unwrap_or(10),
            max_memory,
            cpu_weight: t.cpu_weight.unwrap_or(1),
        });
    }
    let mut pipelines: Vec<(usize, Pipeline)> = Vec::new();
    for p in raw.pipelines {
        let Some(ti) = tenants.iter().position(|t| t.name == p.tenant) else {
            return Err(format!(
                "pipelines: `{}` belongs to tenant `{}`, which has no [tenants.{}] section",
                p.file, p.tenant, p.tenant
            ));
        };
        let t = &tenants[ti];
        let mut pipeline = Pipeline::load(&base.join(&p.file)).map_err(|e| e.to_string())?;
        if !valid_name(&pipeline.name) {
            return Err(format!(
                "{}: pipeline name `{}` must be 1-64 of a-z, 0-9, '-', '_' to run in a host (it names its checkpoint)",
                p.file, pipeline.name
            ));
        }
        if pipelines
            .iter()
            .any(|(i, q)| *i == ti && q.name == pipeline.name)
        {
            return Err(format!(
                "tenant `{}` has two pipelines named `{}`",
                t.name, pipeline.name
            ));
        }
        if let Some(tr) = &pipeline.transform
            && tr.limits.max_memory > t.max_memory
        {
            return Err(format!(
                "pipeline `{}` of tenant `{}`: its guest memory limit ({} bytes) exceeds the tenant's max-memory ({} bytes)",
                pipeline.name, t.name, tr.limits.max_memory, t.max_memory
            ));
        }
        pipeline.checkpoint =
            CheckpointLocation::Dir(t.dir.join("checkpoints").join(&pipeline.name));
        pipelines.push((ti, pipeline));
    }
    for (i, t) in tenants.iter().enumerate() {
        let n = pipelines.iter().filter(|(ti, _)| *ti == i).count();
        if n > t.max_pipelines {
            return Err(format!(
                "tenant `{}` has {n} pipelines; its max-pipelines quota is {}",
                t.name, t.max_pipelines
            ));
        }
    }
    if pipelines.is_empty() {
        return Err("no [[pipelines]] to run".into());
    }
    Ok(HostSpec {
        root,
        cores: raw.cores,
        tenants,
        pipelines,
    })
}
