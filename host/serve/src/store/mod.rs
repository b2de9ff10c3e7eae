//! `weir serve`'s state: an embedded SQLite database (`<data>/weir.db`)
//! holding tenants (token hashes and quotas), components and an event
//! history. The schema is versioned from the first release (`PRAGMA
//! user_version`); each migration runs once, in a transaction.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use super::auth::Caller;

mod changes;
mod components;
mod pipelines;
mod tenants;

pub use components::ComponentRow;
pub use pipelines::PipelineRow;
pub use tenants::TenantRow;

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
    // 2: storage quota for a tenant's data, and the Kafka brokers it may use
    // (one `host:port` per line; none by default).
    "ALTER TABLE tenants ADD COLUMN max_data_bytes INTEGER NOT NULL DEFAULT 10737418240;
     ALTER TABLE tenants ADD COLUMN kafka_brokers TEXT NOT NULL DEFAULT '';",
    // 3: the environment variables a tenant's guests may be given (a JSON
    // object of name -> value, set by the admin; never the server's own).
    "ALTER TABLE tenants ADD COLUMN guest_env TEXT NOT NULL DEFAULT '{}';",
    // 4: the extra interfaces its pipelines may grant their guests (one per
    // line, e.g. `wasi:sockets`; none by default).
    "ALTER TABLE tenants ADD COLUMN grants TEXT NOT NULL DEFAULT '';",
    // 5: the tenant's API request rate (requests per second).
    "ALTER TABLE tenants ADD COLUMN max_requests_per_second INTEGER NOT NULL DEFAULT 100;",
    // 6: whether a pipeline was put with `?upgrade=true` (a cluster node
    // starting it later must know).
    "ALTER TABLE pipelines ADD COLUMN upgrade INTEGER NOT NULL DEFAULT 0;",
];

pub struct Store {
    conn: Mutex<Connection>,
}

pub(super) fn now_ms() -> i64 {
    weir_engine::now_ms()
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, rusqlite::Error> {
        let mut conn = Connection::open(dir.join("weir.db"))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL is SQLite's default; said here because durability rests on it.
        conn.pragma_update(None, "synchronous", "FULL")?;
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, m) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.transaction()?;
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", i + 1)?;
            tx.commit()?;
        }
        // SQLite fsyncs the database and its write-ahead log at each
        // commit (synchronous = FULL), but not the directory naming them
        // when it creates them: without this a power cut can take a new
        // database or log, and every commit in it, with their names.
        weir_engine::durable::sync_dir(dir).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR),
                Some(format!("fsync of {}: {e}", dir.display())),
            )
        })?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::catalog::Change;

    #[test]
    fn migrations_run_once_and_callers_are_found_by_hash() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        assert!(!s.has_admin().unwrap());
        let admin = Change::Admin {
            token_hash: "h-admin".into(),
        };
        let t = TenantRow {
            name: "acme".into(),
            max_pipelines: 2,
            max_memory: 1 << 30,
            cpu_weight: 1,
            max_component_bytes: 1 << 20,
            max_data_bytes: 1 << 30,
            kafka_brokers: vec!["kafka-1:9092".into(), "kafka-2:9092".into()],
            guest_env: [("TZ".to_string(), "UTC".to_string())].into(),
            grants: vec!["wasi:sockets".into()],
            max_requests_per_second: 20,
        };
        let tenant = |row: &TenantRow| Change::Tenant {
            row: row.clone(),
            token_hash: "h-acme".into(),
        };
        let pipeline = Change::Pipeline {
            row: PipelineRow {
                tenant: "acme".into(),
                name: "p".into(),
                spec: "s".into(),
                component: "c".into(),
                desired: "running".into(),
                upgrade: false,
            },
        };
        s.apply(&[admin.clone(), tenant(&t), pipeline.clone()])
            .unwrap();
        drop(s);
        let s = Store::open(dir.path()).unwrap();
        assert_eq!(s.caller("h-admin").unwrap(), Some(Caller::Admin));
        assert_eq!(
            s.caller("h-acme").unwrap(),
            Some(Caller::Tenant("acme".into()))
        );
        assert_eq!(s.caller("nope").unwrap(), None);
        assert_eq!(s.tenants().unwrap(), vec![t.clone()]);
        assert_eq!(s.token_hash("acme").unwrap().as_deref(), Some("h-acme"));
        let mut t2 = t.clone();
        t2.kafka_brokers.clear();
        t2.max_data_bytes = u64::MAX;
        s.apply(&[tenant(&t2)]).unwrap();
        t2.max_data_bytes = i64::MAX as u64;
        assert_eq!(s.tenant("acme").unwrap(), Some(t2));
        assert_eq!(s.pipelines(None).unwrap().len(), 1);
        // Rebuilt from records in any order: rows come before their dependents.
        s.rebuild(&mut [pipeline, tenant(&t), admin]).unwrap();
        assert_eq!(s.pipelines(Some("acme")).unwrap().len(), 1);
        s.apply(&[Change::TenantGone {
            name: "acme".into(),
        }])
        .unwrap();
        assert!(s.pipelines(None).unwrap().is_empty());
        assert_eq!(s.caller("h-acme").unwrap(), None);
    }
}
