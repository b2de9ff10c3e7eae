//! Making [`Change`]s: each list in one SQLite transaction, so a reader
//! never sees half of a write (a tenant gone but its pipelines not).

use rusqlite::{Transaction, params};

use super::tenants::{env_json, sql_int};
use super::{Store, now_ms};
use crate::catalog::Change;

impl Store {
    /// Make `changes` in order, as one transaction.
    pub fn apply(&self, changes: &[Change]) -> Result<(), rusqlite::Error> {
        let mut db = self.db();
        let tx = db.transaction()?;
        for c in changes {
            apply_one(&tx, c)?;
        }
        tx.commit()
    }

    /// Replace the whole shared state by `changes` (the newest change of
    /// every row, in any order): rows come back before the rows that
    /// depend on them. The event history is this node's own and stays.
    pub fn rebuild(&self, changes: &mut [Change]) -> Result<(), rusqlite::Error> {
        changes.sort_by_key(Change::rank);
        let mut db = self.db();
        let tx = db.transaction()?;
        tx.execute_batch("DELETE FROM tenants; DELETE FROM admin;")?;
        for c in changes.iter() {
            apply_one(&tx, c)?;
        }
        tx.commit()
    }
}

fn apply_one(tx: &Transaction<'_>, c: &Change) -> Result<(), rusqlite::Error> {
    match c {
        Change::Admin { token_hash } => {
            tx.execute(
                "INSERT INTO admin (id, token_hash) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET token_hash = excluded.token_hash",
                params![token_hash],
            )?;
        }
        Change::Tenant { row: t, token_hash } => {
            tx.execute(
                "INSERT INTO tenants (name, token_hash, max_pipelines, max_memory, cpu_weight,
                     max_component_bytes, max_data_bytes, kafka_brokers, guest_env, grants,
                     created_ms, max_requests_per_second)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash,
                     max_pipelines = excluded.max_pipelines, max_memory = excluded.max_memory,
                     cpu_weight = excluded.cpu_weight,
                     max_component_bytes = excluded.max_component_bytes,
                     max_data_bytes = excluded.max_data_bytes,
                     kafka_brokers = excluded.kafka_brokers, guest_env = excluded.guest_env,
                     grants = excluded.grants,
                     max_requests_per_second = excluded.max_requests_per_second",
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
        }
        Change::TenantGone { name } => {
            // Its components and pipelines go with it (ON DELETE CASCADE).
            tx.execute("DELETE FROM tenants WHERE name = ?1", params![name])?;
        }
        Change::Component { tenant, row: c } => {
            tx.execute(
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
        }
        Change::ComponentGone { tenant, id } => {
            tx.execute(
                "DELETE FROM components WHERE tenant = ?1 AND id = ?2",
                params![tenant, id],
            )?;
        }
        Change::Pipeline { row: p } => {
            tx.execute(
                "INSERT INTO pipelines (tenant, name, spec, component, desired, upgrade)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (tenant, name) DO UPDATE SET spec = excluded.spec,
                     component = excluded.component, desired = excluded.desired,
                     upgrade = excluded.upgrade",
                params![p.tenant, p.name, p.spec, p.component, p.desired, p.upgrade],
            )?;
        }
        Change::PipelineGone { tenant, name } => {
            tx.execute(
                "DELETE FROM pipelines WHERE tenant = ?1 AND name = ?2",
                params![tenant, name],
            )?;
        }
    }
    Ok(())
}
