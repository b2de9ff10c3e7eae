//! Every write to the service's shared state (the admin token, tenants,
//! components, pipelines) is a list of [`Change`]s decided against an
//! up-to-date view and made as one step. On one node the view is the
//! SQLite store and a process lock makes check-and-write one step; in a
//! cluster the changes are records in a compacted Kafka topic that every
//! node reads into its own SQLite store (see `crate::cluster::config_log`),
//! so both modes answer reads with the same queries.
//!
//! A change carries the whole new row (or says the row is gone), never an
//! edit of it: a compacted topic keeps only the newest record of each key,
//! and that record alone must rebuild the row.

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::store::{ComponentRow, PipelineRow, Store, TenantRow};

/// One row of the shared state, as it is now or gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// The admin token's hash.
    Admin {
        token_hash: String,
    },
    /// A tenant with its quotas and its token's hash.
    Tenant {
        row: TenantRow,
        token_hash: String,
    },
    /// The tenant and everything of it is gone.
    TenantGone {
        name: String,
    },
    Component {
        tenant: String,
        row: ComponentRow,
    },
    ComponentGone {
        tenant: String,
        id: String,
    },
    Pipeline {
        row: PipelineRow,
    },
    PipelineGone {
        tenant: String,
        name: String,
    },
}

impl Change {
    /// The row this change is about: a compacted topic keeps the newest
    /// change of each key.
    pub fn key(&self) -> String {
        match self {
            Change::Admin { .. } => "admin".into(),
            Change::Tenant { row, .. } => format!("tenant/{}", row.name),
            Change::TenantGone { name } => format!("tenant/{name}"),
            Change::Component { tenant, row } => format!("component/{tenant}/{}", row.id),
            Change::ComponentGone { tenant, id } => format!("component/{tenant}/{id}"),
            Change::Pipeline { row } => format!("pipeline/{}/{}", row.tenant, row.name),
            Change::PipelineGone { tenant, name } => format!("pipeline/{tenant}/{name}"),
        }
    }

    /// The record's value: the change as JSON, or nothing (a tombstone,
    /// which compaction eventually removes with every earlier record of the
    /// key) for a row that is gone.
    pub fn value(&self) -> Option<Vec<u8>> {
        match self {
            Change::TenantGone { .. }
            | Change::ComponentGone { .. }
            | Change::PipelineGone { .. } => None,
            c => Some(serde_json::to_vec(c).expect("a change serializes")),
        }
    }

    /// The change a record holds; `None` for a key weir does not write.
    pub fn from_record(key: &str, value: Option<&[u8]>) -> Result<Option<Change>, String> {
        let ours = ["admin", "tenant/", "component/", "pipeline/"];
        if !ours.iter().any(|k| key.starts_with(k)) {
            return Ok(None);
        }
        if let Some(v) = value {
            let c: Change = serde_json::from_slice(v).map_err(|e| format!("record {key}: {e}"))?;
            if c.key() != key {
                return Err(format!("record {key} holds a change of {}", c.key()));
            }
            return Ok(Some(c));
        }
        let parts: Vec<&str> = key.split('/').collect();
        Ok(match parts.as_slice() {
            ["tenant", name] => Some(Change::TenantGone {
                name: name.to_string(),
            }),
            ["component", tenant, id] => Some(Change::ComponentGone {
                tenant: tenant.to_string(),
                id: id.to_string(),
            }),
            ["pipeline", tenant, name] => Some(Change::PipelineGone {
                tenant: tenant.to_string(),
                name: name.to_string(),
            }),
            _ => None,
        })
    }

    /// Rows a change depends on come first when a whole state is rebuilt
    /// from the newest record of each key, whose order compaction does not
    /// keep: the admin, tenants, then their components and pipelines.
    pub fn rank(&self) -> u8 {
        match self {
            Change::Admin { .. } => 0,
            Change::Tenant { .. } | Change::TenantGone { .. } => 1,
            Change::Component { .. } | Change::ComponentGone { .. } => 2,
            Change::Pipeline { .. } | Change::PipelineGone { .. } => 3,
        }
    }
}

/// What [`Catalog::write`] runs under the write lock: look at the view,
/// return the changes to make and the answer for the caller (or refuse).
pub type Decide<T> = Box<dyn FnMut(&Store) -> ApiResult<(Vec<Change>, T)> + Send>;

/// Where writes go.
pub enum Catalog {
    /// This process's SQLite store, one writer at a time.
    Local(std::sync::Mutex<()>),
    /// The cluster's config topic.
    Cluster(std::sync::Arc<crate::cluster::ConfigLog>),
}

impl Catalog {
    pub fn local() -> Catalog {
        Catalog::Local(std::sync::Mutex::new(()))
    }

    /// Decide against an up-to-date view and make the changes, as one
    /// step: no other write (on any node) lands between the decision and
    /// its changes. Blocks (in a cluster, on Kafka).
    pub fn write<T>(&self, store: &Store, mut decide: Decide<T>) -> ApiResult<T> {
        match self {
            Catalog::Local(lock) => {
                let _one_writer = lock.lock().unwrap_or_else(|e| e.into_inner());
                let (changes, answer) = decide(store)?;
                store.apply(&changes)?;
                Ok(answer)
            }
            Catalog::Cluster(log) => log.write(store, &mut decide).map_err(|e| match e {
                crate::cluster::WriteError::Refused(api) => api,
                other => ApiError::unavailable(other.to_string()),
            }),
        }
    }

    /// Whether this node is one of a cluster's.
    pub fn clustered(&self) -> bool {
        !matches!(self, Catalog::Local(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_tombstones_name_their_row() {
        let p = Change::Pipeline {
            row: PipelineRow {
                tenant: "acme".into(),
                name: "p1".into(),
                spec: "x".into(),
                component: "ab".into(),
                desired: "running".into(),
                upgrade: false,
            },
        };
        let back = Change::from_record(&p.key(), p.value().as_deref()).unwrap();
        assert_eq!(back, Some(p.clone()));
        let gone = Change::PipelineGone {
            tenant: "acme".into(),
            name: "p1".into(),
        };
        assert_eq!(gone.value(), None);
        assert_eq!(
            Change::from_record("pipeline/acme/p1", None).unwrap(),
            Some(gone)
        );
        assert_eq!(Change::from_record("other", None).unwrap(), None);
        assert_eq!(Change::from_record("seal", Some(b"node-1")).unwrap(), None);
        let err = Change::from_record("tenant/b", p.value().as_deref()).unwrap_err();
        assert!(err.contains("holds a change of pipeline/acme/p1"), "{err}");
    }
}
