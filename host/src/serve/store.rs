//! `weir serve`'s state: an embedded SQLite database (`<data>/weir.db`)
//! holding tenants (token hashes and quotas), components and an event
//! history. The schema is versioned from the first release (`PRAGMA
//! user_version`); each migration runs once, in a transaction.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::auth::Caller;

/// The migrations, in order; `user_version` is how many have run.
const MIGRATIONS: &[&str] = &[
    // 1: tenants, components, pipelines, events.
    "CREATE TABLE admin (id INTEGER PRIMARY KEY CHECK (id = 1), token_hash TEXT NOT NULL);
     CREATE TABLE tenants (
         name TEXT PRIMARY KEY,
         token_hash TEXT NOT NULL UNIQUE,
         max_pipelines INTEGER NOT NULL,
         max_memory INTEGER NOT NULL,
         cpu_weight INTEGER NOT NULL,
         max_component_bytes INTEGER NOT NULL,
         created_ms INTEGER NOT NULL);
     CREATE TABLE components (
         tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
         id TEXT NOT NULL,
         size INTEGER NOT NULL,
         world TEXT NOT NULL,
         imports TEXT NOT NULL,
         exports TEXT NOT NULL,
         created_ms INTEGER NOT NULL,
         PRIMARY KEY (tenant, id));
     CREATE TABLE pipelines (
         tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE,
         name TEXT NOT NULL,
         spec TEXT NOT NULL,
         component TEXT NOT NULL,
         desired TEXT NOT NULL,
         PRIMARY KEY (tenant, name));
     CREATE TABLE events (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         ts_ms INTEGER NOT NULL,
         tenant TEXT,
         subject TEXT NOT NULL,
         kind TEXT NOT NULL,
         detail TEXT NOT NULL);",
];

pub struct Store {
    conn: Mutex<Connection>,
}

/// A tenant and its quotas.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct TenantRow {
    pub name: String,
    pub max_pipelines: u64,
    pub max_memory: u64,
    pub cpu_weight: u64,
    pub max_component_bytes: u64,
}

/// A stored component (its bytes are `<data>/components/<id>.wasm`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComponentRow {
    pub id: String,
    pub size: u64,
    pub world: String,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

fn tenant_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TenantRow> {
    Ok(TenantRow {
        name: r.get(0)?,
        max_pipelines: r.get::<_, i64>(1)? as u64,
        max_memory: r.get::<_, i64>(2)? as u64,
        cpu_weight: r.get::<_, i64>(3)? as u64,
        max_component_bytes: r.get::<_, i64>(4)? as u64,
    })
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

fn now_ms() -> i64 {
    crate::engine::progress::now_ms()
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, rusqlite::Error> {
        let mut conn = Connection::open(dir.join("weir.db"))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, m) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.transaction()?;
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", i + 1)?;
            tx.commit()?;
        }
        Ok(Store {
            conn: Mutex::new(conn),
        })
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn has_admin(&self) -> Result<bool, rusqlite::Error> {
        self.db()
            .query_row("SELECT COUNT(*) FROM admin", [], |r| r.get::<_, i64>(0))
            .map(|n| n > 0)
    }

    pub fn set_admin(&self, token_hash: &str) -> Result<(), rusqlite::Error> {
        self.db().execute(
            "INSERT INTO admin (id, token_hash) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET token_hash = excluded.token_hash",
            params![token_hash],
        )?;
        Ok(())
    }

    /// Who holds the token with this hash.
    pub fn caller(&self, token_hash: &str) -> Result<Option<Caller>, rusqlite::Error> {
        let db = self.db();
        let admin: Option<i64> = db
            .query_row(
                "SELECT id FROM admin WHERE token_hash = ?1",
                params![token_hash],
                |r| r.get(0),
            )
            .optional()?;
        if admin.is_some() {
            return Ok(Some(Caller::Admin));
        }
        db.query_row(
            "SELECT name FROM tenants WHERE token_hash = ?1",
            params![token_hash],
            |r| r.get(0),
        )
        .optional()
        .map(|t| t.map(Caller::Tenant))
    }

    pub fn event(&self, tenant: Option<&str>, subject: &str, kind: &str, detail: &str) {
        let r = self.db().execute(
            "INSERT INTO events (ts_ms, tenant, subject, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![now_ms(), tenant, subject, kind, detail],
        );
        if let Err(e) = r {
            tracing::error!("serve: recording event {kind} of {subject}: {e}");
        }
    }

    /// Create a tenant; false if the name is taken.
    pub fn create_tenant(&self, t: &TenantRow, token_hash: &str) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "INSERT INTO tenants (name, token_hash, max_pipelines, max_memory, cpu_weight, max_component_bytes, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (name) DO NOTHING",
            params![
                t.name,
                token_hash,
                t.max_pipelines as i64,
                t.max_memory as i64,
                t.cpu_weight as i64,
                t.max_component_bytes as i64,
                now_ms()
            ],
        )?;
        Ok(n == 1)
    }

    pub fn tenants(&self) -> Result<Vec<TenantRow>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(
            "SELECT name, max_pipelines, max_memory, cpu_weight, max_component_bytes FROM tenants ORDER BY name",
        )?;
        let rows = q.query_map([], tenant_row)?;
        rows.collect()
    }

    pub fn tenant(&self, name: &str) -> Result<Option<TenantRow>, rusqlite::Error> {
        self.db()
            .query_row(
                "SELECT name, max_pipelines, max_memory, cpu_weight, max_component_bytes FROM tenants WHERE name = ?1",
                params![name],
                tenant_row,
            )
            .optional()
    }

    /// Delete a tenant and its rows; false if there was none.
    pub fn delete_tenant(&self, name: &str) -> Result<bool, rusqlite::Error> {
        let n = self
            .db()
            .execute("DELETE FROM tenants WHERE name = ?1", params![name])?;
        Ok(n == 1)
    }

    pub fn set_tenant_token(&self, name: &str, token_hash: &str) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "UPDATE tenants SET token_hash = ?2 WHERE name = ?1",
            params![name, token_hash],
        )?;
        Ok(n == 1)
    }

    pub fn add_component(&self, tenant: &str, c: &ComponentRow) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "INSERT INTO components (tenant, id, size, world, imports, exports, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (tenant, id) DO NOTHING",
            params![
                tenant,
                c.id,
                c.size as i64,
                c.world,
                c.imports.join("\n"),
                c.exports.join("\n"),
                now_ms()
            ],
        )?;
        Ok(n == 1)
    }

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

    pub fn delete_component(&self, tenant: &str, id: &str) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "DELETE FROM components WHERE tenant = ?1 AND id = ?2",
            params![tenant, id],
        )?;
        Ok(n == 1)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_run_once_and_callers_are_found_by_hash() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        assert!(!s.has_admin().unwrap());
        s.set_admin("h-admin").unwrap();
        let t = TenantRow {
            name: "acme".into(),
            max_pipelines: 2,
            max_memory: 1 << 30,
            cpu_weight: 1,
            max_component_bytes: 1 << 20,
        };
        assert!(s.create_tenant(&t, "h-acme").unwrap());
        assert!(!s.create_tenant(&t, "h-other").unwrap());
        drop(s);
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.caller("h-admin").unwrap(), Some(Caller::Admin));
        assert_eq!(
            s.caller("h-acme").unwrap(),
            Some(Caller::Tenant("acme".into()))
        );
        assert_eq!(s.caller("nope").unwrap(), None);
        assert_eq!(s.tenants().unwrap(), vec![t]);
    }
}
