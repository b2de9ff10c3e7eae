//! Pipelines: each tenant's specs and whether they should run.

use rusqlite::params;

use super::Store;

/// A pipeline as stored: its spec (with the component path resolved) and
/// whether it should run.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineRow {
    pub tenant: String,
    pub name: String,
    pub spec: String,
    pub component: String,
    /// `running` or `stopped`.
    pub desired: String,
}

impl Store {
    /// Create or replace; returns whether it was new.
    pub fn put_pipeline(&self, p: &PipelineRow) -> Result<bool, rusqlite::Error> {
        let db = self.db();
        let existed: i64 = db.query_row(
            "SELECT COUNT(*) FROM pipelines WHERE tenant = ?1 AND name = ?2",
            params![p.tenant, p.name],
            |r| r.get(0),
        )?;
        db.execute(
            "INSERT INTO pipelines (tenant, name, spec, component, desired) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (tenant, name) DO UPDATE SET spec = excluded.spec,
                 component = excluded.component, desired = excluded.desired",
            params![p.tenant, p.name, p.spec, p.component, p.desired],
        )?;
        Ok(existed == 0)
    }

    /// One tenant's pipelines, or every tenant's with `None`.
    pub fn pipelines(&self, tenant: Option<&str>) -> Result<Vec<PipelineRow>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(
            "SELECT tenant, name, spec, component, desired FROM pipelines
             WHERE ?1 IS NULL OR tenant = ?1 ORDER BY tenant, name",
        )?;
        let rows = q.query_map(params![tenant], |r| {
            Ok(PipelineRow {
                tenant: r.get(0)?,
                name: r.get(1)?,
                spec: r.get(2)?,
                component: r.get(3)?,
                desired: r.get(4)?,
            })
        })?;
        rows.collect()
    }

    pub fn set_desired(
        &self,
        tenant: &str,
        name: &str,
        desired: &str,
    ) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "UPDATE pipelines SET desired = ?3 WHERE tenant = ?1 AND name = ?2",
            params![tenant, name, desired],
        )?;
        Ok(n == 1)
    }

    pub fn delete_pipeline(&self, tenant: &str, name: &str) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "DELETE FROM pipelines WHERE tenant = ?1 AND name = ?2",
            params![tenant, name],
        )?;
        Ok(n == 1)
    }
}
