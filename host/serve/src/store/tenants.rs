//! Tenants: token hashes, quotas and the Kafka brokers they may use.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::Store;

/// A tenant and its quotas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
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
    /// env`), with their values; the API shows only the names
    /// ([`TenantRow::shown`]), since values may be credentials.
    pub guest_env: BTreeMap<String, String>,
    /// Interfaces beyond the world its pipelines may grant (`grants = [..]`
    /// in a pipeline), e.g. `wasi:sockets` for Python guests.
    pub grants: Vec<String>,
    /// Its API calls' rate ([`crate::rates`]).
    pub max_requests_per_second: u64,
}

impl TenantRow {
    /// The tenant as the API shows it: its guest variables by name only.
    pub fn shown(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a tenant row serializes");
        v["guest-env"] = self.guest_env.keys().cloned().collect::<Vec<_>>().into();
        v
    }
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
    pub fn tenants(&self) -> Result<Vec<TenantRow>, rusqlite::Error> {
        let db = self.db();
        let mut q = db.prepare(&format!("SELECT {COLUMNS} FROM tenants ORDER BY name"))?;
        let rows = q.query_map([], tenant_row)?;
        rows.collect()
    }

    /// A tenant's `max-requests-per-second` alone: read on every request.
    pub fn request_rate(&self, name: &str) -> Result<Option<u64>, rusqlite::Error> {
        self.db()
            .query_row(
                "SELECT max_requests_per_second FROM tenants WHERE name = ?1",
                params![name],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|r| r.map(|n| n as u64))
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

    /// The hash of tenant `name`'s token (a change of the tenant carries
    /// it whole).
    pub fn token_hash(&self, name: &str) -> Result<Option<String>, rusqlite::Error> {
        self.db()
            .query_row(
                "SELECT token_hash FROM tenants WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
    }
}

/// SQLite integers are signed; quotas above `i64::MAX` mean "no limit".
pub(super) fn sql_int(n: u64) -> i64 {
    n.min(i64::MAX as u64) as i64
}

pub(super) fn env_json(env: &BTreeMap<String, String>) -> String {
    serde_json::to_string(env).expect("a map of strings serializes")
}
