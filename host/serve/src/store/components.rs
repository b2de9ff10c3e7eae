//! Components: what each tenant uploaded (the bytes are shared,
//! content-addressed files under `<data>/components/`).

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::Store;

/// A stored component (its bytes are `<data>/components/<id>.wasm`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentRow {
    pub id: String,
    pub size: u64,
    pub world: String,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

fn component_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ComponentRow> {
    let split = |s: String| -> Vec<String> { s.lines().map(str::to_string).collect() };
    Ok(ComponentRow {
        id: r.get(0)?,
        size: r.get::<_, i64>(1)? as u64,
        world: r.get(2)?,
        imports: split(r.get(3)?),
        exports: split(r.get(4)?),
    })
}

impl Store {
    pub fn components(&self, tenant: &str) -> Result<Vec<ComponentRow>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(
            "SELECT id, size, world, imports, exports FROM components WHERE tenant = ?1 ORDER BY created_ms, id",
        )?;
        let rows = q.query_map(params![tenant], component_row)?;
        rows.collect()
    }

    /// Tenant `tenant`'s component `id`, if it has one.
    pub fn component(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ComponentRow>, rusqlite::Error> {
        self.db()
            .query_row(
                "SELECT id, size, world, imports, exports FROM components WHERE tenant = ?1 AND id = ?2",
                params![tenant, id],
                component_row,
            )
            .optional()
    }

    /// Bytes of components a tenant has stored.
    pub fn component_bytes(&self, tenant: &str) -> Result<u64, rusqlite::Error> {
        self.db()
            .query_row(
                "SELECT COALESCE(SUM(size), 0) FROM components WHERE tenant = ?1",
                params![tenant],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
    }

    /// Pipelines of `tenant` that use component `id`.
    pub fn pipelines_using(&self, tenant: &str, id: &str) -> Result<Vec<String>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(
            "SELECT name FROM pipelines WHERE tenant = ?1 AND component = ?2 ORDER BY name",
        )?;
        let rows = q.query_map(params![tenant, id], |r| r.get(0))?;
        rows.collect()
    }

    /// Whether any tenant still has component `id` (its bytes are shared).
    pub fn component_referenced(&self, id: &str) -> Result<bool, rusqlite::Error> {
        self.db()
            .query_row(
                "SELECT COUNT(*) FROM components WHERE id = ?1",
                params![id],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
    }
}
