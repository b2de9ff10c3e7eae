//! Tenants: token hashes, quotas and the Kafka brokers they may use.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{Store, now_ms};

/// A tenant and its quotas.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct TenantRow {
    pub name: String,
    pub max_pipelines: u64,
    pub max_memory: u64,
    pub cpu_weight: u64,
    pub max_component_bytes: u64,
    /// Checkpoints, embedded logs and file output under its data root.
    pub max_data_bytes: u64,
    /// `host:port` of the Kafka brokers its pipelines may name.
    pub kafka_brokers: Vec<String>,
    /// Variables its guests may be given by name (`[transform.sandbox]
    /// env`), with their values; the API shows only the names, since
    /// values may be credentials.
    #[serde(serialize_with = "names_only")]
    pub guest_env: BTreeMap<String, String>,
    /// Interfaces beyond the world its pipelines may grant (`grants = [..]`
    /// in a pipeline), e.g. `wasi:sockets` for Python guests.
    pub grants: Vec<String>,
    /// Its API calls' rate ([`crate::rates`]).
    pub max_requests_per_second: u64,
}

fn names_only<S: serde::Serializer>(
    env: &BTreeMap<String, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(env.keys())
}

const COLUMNS: &str = "name, max_pipelines, max_memory, cpu_weight, max_component_bytes, max_data_bytes, kafka_brokers, guest_env, grants, max_requests_per_second";

fn tenant_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TenantRow> {
    Ok(TenantRow {
        name: r.get(0)?,
        max_pipelines: r.get::<_, i64>(1)? as u64,
        max_memory: r.get::<_, i64>(2)? as u64,
        cpu_weight: r.get::<_, i64>(3)? as u64,
        max_component_bytes: r.get::<_, i64>(4)? as u64,
        max_data_bytes: r.get::<_, i64>(5)? as u64,
        kafka_brokers: r.get::<_, String>(6)?.lines().map(str::to_string).collect(),
        guest_env: serde_json::from_str(&r.get::<_, String>(7)?).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(7, rusqlite::types::Type::Text, Box::new(e))
        })?,
        grants: r.get::<_, String>(8)?.lines().map(str::to_string).collect(),
        max_requests_per_second: r.get::<_, i64>(9)? as u64,
    })
}

impl Store {
    /// Create a tenant; false if the name is taken.
    pub fn create_tenant(&self, t: &TenantRow, token_hash: &str) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "INSERT INTO tenants (name, token_hash, max_pipelines, max_memory, cpu_weight,
                 max_component_bytes, max_data_bytes, kafka_brokers, guest_env, grants, created_ms,
                 max_requests_per_second)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT (name) DO NOTHING",
            params![
                t.name,
                token_hash,
                sql_int(t.max_pipelines),
                sql_int(t.max_memory),
                sql_int(t.cpu_weight),
                sql_int(t.max_component_bytes),
                sql_int(t.max_data_bytes),
                t.kafka_brokers.join("\n"),
                env_json(&t.guest_env),
                t.grants.join("\n"),
                now_ms(),
                sql_int(t.max_requests_per_second),
            ],
        )?;
        Ok(n == 1)
    }

    pub fn tenants(&self) -> Result<Vec<TenantRow>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(&format!("SELECT {COLUMNS} FROM tenants ORDER BY name"))?;
        let rows = q.query_map([], tenant_row)?;
        rows.collect()
    }

    pub fn tenant(&self, name: &str) -> Result<Option<TenantRow>, rusqlite::Error> {
        self.db()
            .query_row(
                &format!("SELECT {COLUMNS} FROM tenants WHERE name = ?1"),
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

    /// Replace a tenant's quotas and broker allow-list; false if there is
    /// no such tenant.
    pub fn update_tenant(&self, t: &TenantRow) -> Result<bool, rusqlite::Error> {
        let n = self.db().execute(
            "UPDATE tenants SET max_pipelines = ?2, max_memory = ?3, cpu_weight = ?4,
                 max_component_bytes = ?5, max_data_bytes = ?6, kafka_brokers = ?7,
                 guest_env = ?8, grants = ?9, max_requests_per_second = ?10
             WHERE name = ?1",
            params![
                t.name,
                sql_int(t.max_pipelines),
                sql_int(t.max_memory),
                sql_int(t.cpu_weight),
                sql_int(t.max_component_bytes),
                sql_int(t.max_data_bytes),
                t.kafka_brokers.join("\n"),
                env_json(&t.guest_env),
                t.grants.join("\n"),
                sql_int(t.max_requests_per_second),
            ],
        )?;
        Ok(n == 1)
    }
}

/// SQLite integers are signed; quotas above `i64::MAX` mean "no limit".
fn sql_int(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

fn env_json(env: &BTreeMap<String, String>) -> String {
    serde_json::to_string(env).expect("a map of strings serializes")
}
