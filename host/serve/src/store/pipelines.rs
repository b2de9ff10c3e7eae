//! Pipelines: each tenant's specs and whether they should run.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::Store;

/// A pipeline as stored: its spec (with the component path resolved) and
/// whether it should run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineRow {
    pub tenant: String,
    pub name: String,
    pub spec: String,
    /// The uploaded component's id; empty for a pipeline whose `[window]`
    /// the host runs without one.
    pub component: String,
    /// `running` or `stopped`.
    pub desired: String,
    /// Put with `?upgrade=true`: a changed component keeps a stateful
    /// checkpoint's state when this spec starts (where it starts in a
    /// cluster).
    #[serde(default)]
    pub upgrade: bool,
}

impl PipelineRow {
    /// Whether it runs an uploaded component (not only a host `[window]`).
    pub fn has_component(&self) -> bool {
        !self.component.is_empty()
    }
}

const COLUMNS: &str = "tenant, name, spec, component, desired, upgrade";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PipelineRow> {
    Ok(PipelineRow {
        tenant: r.get(0)?,
        name: r.get(1)?,
        spec: r.get(2)?,
        component: r.get(3)?,
        desired: r.get(4)?,
        upgrade: r.get(5)?,
    })
}

impl Store {
    /// One tenant's pipelines, or every tenant's with `None`.
    pub fn pipelines(&self, tenant: Option<&str>) -> Result<Vec<PipelineRow>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(&format!(
            "SELECT {COLUMNS} FROM pipelines
             WHERE ?1 IS NULL OR tenant = ?1 ORDER BY tenant, name"
        ))?;
        let rows = q.query_map(params![tenant], row)?;
        rows.collect()
    }

    /// Tenant `tenant`'s pipeline `name`, if it has one.
    pub fn pipeline(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<PipelineRow>, rusqlite::Error> {
        use rusqlite::OptionalExtension;
        self.db()
            .query_row(
                &format!("SELECT {COLUMNS} FROM pipelines WHERE tenant = ?1 AND name = ?2"),
                params![tenant, name],
                row,
            )
            .optional()
    }

    /// How many pipelines tenant `tenant` has.
    pub fn pipeline_count(&self, tenant: &str) -> Result<u64, rusqlite::Error> {
        self.db().query_row(
            "SELECT COUNT(*) FROM pipelines WHERE tenant = ?1",
            params![tenant],
            |r| r.get::<_, i64>(0).map(|n| n.max(0) as u64),
        )
    }
}
