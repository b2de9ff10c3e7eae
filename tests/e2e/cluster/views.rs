//! What the nodes say of the cluster: every pipeline's state and node as
//! `GET /v1/pipelines` lists them to the admin, `GET /v1/cluster` (nodes,
//! their slots and liveness) and the `weir_cluster_*` gauges; and the
//! conditions the test waits for, each an `Err` naming what is not so yet.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::nodes::{Cluster, SLOTS};
use crate::serve::Server;

/// (tenant, pipeline name).
pub(super) type Key = (String, String);

/// Where and how a pipeline runs, as a node lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Placement {
    pub state: String,
    /// The node running it (`None` for a group pipeline, or none yet).
    pub node: Option<String>,
    /// A group pipeline's: the nodes running a member of it (in
    /// `/v1/cluster`, every pipeline's: the nodes running it).
    pub members: Option<BTreeSet<String>>,
}

pub(super) type Placements = BTreeMap<Key, Placement>;

fn key(v: &Value) -> Key {
    let s = |f: &str| v[f].as_str().unwrap_or_default().to_string();
    (s("tenant"), s("name"))
}

fn placement(v: &Value) -> Placement {
    Placement {
        // A failure names its reason, so a test that waits in vain says it.
        state: match (v["state"].as_str(), v["last-error"].as_str()) {
            (Some("failed"), Some(why)) => format!("failed: {why}"),
            (s, _) => s.unwrap_or("?").to_string(),
        },
        node: v["node"].as_str().map(String::from),
        members: v["nodes"].as_array().map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        }),
    }
}

/// Every tenant's pipelines as `s` lists them to the admin.
pub(super) fn placements(s: &Server, admin: &str) -> Result<Placements, String> {
    let (st, v) = s.call("GET", "/v1/pipelines", Some(admin), None);
    match v.as_array() {
        Some(list) if st == 200 => Ok(list.iter().map(|p| (key(p), placement(p))).collect()),
        _ => Err(format!("{}: GET /v1/pipelines answered {st} {v}", s.base)),
    }
}

/// The nodes running a pipeline, whichever way a view names them (`node`,
/// or `nodes` as a group pipeline's list and `/v1/cluster` do).
fn runners(pl: &Placement) -> BTreeSet<String> {
    match &pl.members {
        Some(m) => m.clone(),
        None => pl.node.iter().cloned().collect(),
    }
}

/// The pipelines `node` runs: its own, and the group pipelines it runs a
/// member of.
pub(super) fn on_node(p: &Placements, node: &str) -> Vec<Key> {
    p.iter()
        .filter(|(_, pl)| {
            pl.node.as_deref() == Some(node)
                || pl.members.as_ref().is_some_and(|m| m.contains(node))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// One node as `GET /v1/cluster` shows it.
#[derive(Debug)]
pub(super) struct NodeView {
    pub url: String,
    pub slots: BTreeSet<u64>,
    pub pipelines: u64,
    pub alive: bool,
}

/// `GET /v1/cluster`.
#[derive(Debug)]
pub(super) struct ClusterView {
    /// The node that answered.
    pub node: String,
    pub slots: u64,
    pub nodes: BTreeMap<String, NodeView>,
    pub pipelines: Placements,
    /// Each pipeline's slot.
    pub slot_of: BTreeMap<Key, u64>,
}

pub(super) fn cluster(s: &Server, admin: &str) -> Result<ClusterView, String> {
    let (st, v) = s.call("GET", "/v1/cluster", Some(admin), None);
    let nodes = match v["nodes"].as_array() {
        Some(n) if st == 200 => n,
        _ => return Err(format!("{}: GET /v1/cluster answered {st} {v}", s.base)),
    };
    let nodes: BTreeMap<String, NodeView> = nodes
        .iter()
        .map(|n| {
            let view = NodeView {
                url: n["url"].as_str().unwrap_or_default().to_string(),
                slots: n["slots"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default(),
                pipelines: n["pipelines"].as_u64().unwrap_or(0),
                alive: n["alive"].as_bool().unwrap_or(false),
            };
            (n["node"].as_str().unwrap_or_default().to_string(), view)
        })
        .collect();
    let pipelines: Placements = v["pipelines"]
        .as_array()
        .map(|a| a.iter().map(|p| (key(p), placement(p))).collect())
        .unwrap_or_default();
    let slot_of: BTreeMap<Key, u64> = v["pipelines"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((key(p), p["slot"].as_u64()?)))
                .collect()
        })
        .unwrap_or_default();
    Ok(ClusterView {
        node: v["node"].as_str().unwrap_or_default().to_string(),
        slots: v["slots"].as_u64().unwrap_or(0),
        nodes,
        pipelines,
        slot_of,
    })
}

/// The first keys at which two listings differ, for a message.
fn differences(a: &Placements, b: &Placements) -> String {
    let keys: BTreeSet<&Key> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .take(5)
        .map(|k| format!("{k:?}: {:?} vs {:?}", a.get(k), b.get(k)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The value of gauge `name` (no labels) in a Prometheus text.
pub(super) fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

impl Cluster {
    /// Settled: every live node lists the same `expect` pipelines, each
    /// running on a live node (a group pipeline on every live node); each
    /// live node's `/v1/cluster` names itself, shows the live nodes alive
    /// (at their addresses) and no other, and the live nodes' slots
    /// together are every slot, none twice. `spread`: every live node also
    /// holds a slot and runs a pipeline. The settled listing.
    pub fn steady(&self, expect: usize, spread: bool) -> Result<Placements, String> {
        let live = self.live_names();
        let mut first: Option<(String, Placements)> = None;
        for n in self.live() {
            let p = placements(&n.server, &self.admin)?;
            if p.len() != expect {
                return Err(format!(
                    "{} lists {} pipelines, not {expect}",
                    n.name,
                    p.len()
                ));
            }
            for (k, pl) in &p {
                let placed = match &pl.members {
                    Some(members) => members == &live,
                    None => pl.node.as_ref().is_some_and(|x| live.contains(x)),
                };
                if pl.state != "running" || !placed {
                    return Err(format!("{} lists {k:?} as {pl:?} (live: {live:?})", n.name));
                }
            }
            if let Some((other, f)) = &first {
                if f != &p {
                    return Err(format!(
                        "{} and {other} list otherwise: {}",
                        n.name,
                        differences(&p, f)
                    ));
                }
            } else {
                first = Some((n.name.clone(), p.clone()));
            }
            let c = cluster(&n.server, &self.admin)?;
            if c.node != n.name || c.slots != SLOTS {
                return Err(format!(
                    "{}'s /v1/cluster says node {:?}, {} slots",
                    n.name, c.node, c.slots
                ));
            }
            let mut held = Vec::new();
            for (name, v) in &c.nodes {
                if v.alive != live.contains(name) || (!v.alive && !v.slots.is_empty()) {
                    return Err(format!("{} shows {name} as {v:?} (live: {live:?})", n.name));
                }
                held.extend(v.slots.iter().copied());
            }
            held.sort();
            if held != (0..SLOTS).collect::<Vec<u64>>() {
                return Err(format!(
                    "{} shows slots held {held:?}: {:?}",
                    n.name, c.nodes
                ));
            }
            for m in self.live() {
                let Some(v) = c.nodes.get(&m.name) else {
                    return Err(format!("{} does not show {}", n.name, m.name));
                };
                if v.url != m.server.base {
                    return Err(format!(
                        "{} shows {} at {:?}, not {}",
                        n.name, m.name, v.url, m.server.base
                    ));
                }
                let runs = p
                    .values()
                    .any(|pl| pl.node.as_deref() == Some(m.name.as_str()));
                if spread && (v.slots.is_empty() || v.pipelines == 0 || !runs) {
                    return Err(format!(
                        "{} shows {} with slots {:?} and {} pipelines",
                        n.name, m.name, v.slots, v.pipelines
                    ));
                }
            }
            // The cluster view and the list agree on who runs what.
            if c.pipelines.len() != expect {
                return Err(format!(
                    "{}'s /v1/cluster names {} pipelines",
                    n.name,
                    c.pipelines.len()
                ));
            }
            for (k, pl) in &c.pipelines {
                let listed = p.get(k);
                // A pipeline (not a group's) runs where its slot is held.
                if let Some(node) = listed.and_then(|l| l.node.as_ref()) {
                    let slot = c.slot_of.get(k);
                    let holds = c.nodes.get(node).map(|v| &v.slots);
                    if !slot.is_some_and(|s| holds.is_some_and(|h| h.contains(s))) {
                        return Err(format!(
                            "{}: {k:?} in slot {slot:?} runs on {node}, which holds {holds:?}",
                            n.name
                        ));
                    }
                }
                if listed.map(|l| (&l.state, runners(l))) != Some((&pl.state, runners(pl))) {
                    return Err(format!(
                        "{}: /v1/cluster has {k:?} as {pl:?}, the list as {listed:?}",
                        n.name
                    ));
                }
            }
        }
        Ok(first.expect("a live node").1)
    }

    /// Every pipeline of `keys` runs again on a live node other than
    /// `from` (a group pipeline: on every live node, and only there), as
    /// the first live node lists them.
    pub fn moved(&self, keys: &[Key], from: &str) -> Result<(), String> {
        let live = self.live_names();
        let p = placements(self.any(), &self.admin)?;
        for k in keys {
            let pl = p.get(k).ok_or_else(|| format!("{k:?} is not listed"))?;
            let placed = match &pl.members {
                Some(members) => members == &live,
                None => pl
                    .node
                    .as_ref()
                    .is_some_and(|n| n != from && live.contains(n)),
            };
            if pl.state != "running" || !placed {
                return Err(format!("{k:?} is {pl:?} (live: {live:?})"));
            }
        }
        Ok(())
    }

    /// Every live node's `/v1/cluster` shows `node` not alive, holding no
    /// slot.
    pub fn sees_dead(&self, node: &str) -> Result<(), String> {
        for n in self.live() {
            let c = cluster(&n.server, &self.admin)?;
            if let Some(v) = c.nodes.get(node)
                && (v.alive || !v.slots.is_empty())
            {
                return Err(format!("{} shows {node} as {v:?}", n.name));
            }
        }
        Ok(())
    }

    /// Each live node's `weir_cluster_*` gauges: as many nodes as are
    /// live, the slots held adding up to all of them, each running some.
    pub fn gauges_agree(&self) -> Result<(), String> {
        let live = self.live();
        let mut slots = 0.0;
        for n in &live {
            let text = n.server.metrics(&self.admin);
            let g = |name: &str| {
                gauge(&text, name).ok_or_else(|| format!("{}: no {name} in /metrics", n.name))
            };
            let (nodes, held, running) = (
                g("weir_cluster_nodes")?,
                g("weir_cluster_slots_held")?,
                g("weir_cluster_pipelines_running")?,
            );
            if nodes != live.len() as f64 || running < 1.0 {
                return Err(format!(
                    "{}: weir_cluster_nodes {nodes}, weir_cluster_pipelines_running {running}",
                    n.name
                ));
            }
            slots += held;
        }
        if slots != SLOTS as f64 {
            return Err(format!("weir_cluster_slots_held adds up to {slots}"));
        }
        Ok(())
    }
}
