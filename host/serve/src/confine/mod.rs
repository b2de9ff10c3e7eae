//! Confinement of a tenant's pipeline. Every place it names on disk
//! (checkpoint, log roots and the topics joined onto them, file
//! directories, sandbox grants) comes out of [`TenantRoot::place`]; every
//! number is under a [`ceilings`] value; its Kafka clients name only
//! allowed brokers and harmless properties ([`kafka`]); its transform is a
//! component the tenant uploaded, and its guest sees only the variables
//! the admin set for the tenant.

pub mod ceilings;
mod kafka;
mod root;

pub use kafka::broker_address;
pub use root::TenantRoot;

use weir_connectors::checkpoints::CheckpointLocation;
use weir_pipeline::spec::{Pipeline, SinkSpec, SourceSpec};

/// What a tenant's pipelines are confined by, as the admin set it.
pub struct Allowed<'a> {
    /// Kafka brokers (`host:port`).
    pub brokers: &'a [String],
    /// Interfaces its pipelines may grant their guests.
    pub grants: &'a [String],
    /// The tenant's guest memory quota.
    pub max_memory: u64,
}

/// Every place of `p` inside `root`; every number under its ceiling, every
/// Kafka client and grant within what `allowed` says.
pub fn pipeline(p: &Pipeline, root: &TenantRoot, allowed: &Allowed<'_>) -> Result<(), String> {
    let (brokers, grants, max_memory) = (allowed.brokers, allowed.grants, allowed.max_memory);
    if p.group.is_some() {
        return Err(
            "[group] pipelines run as `weir run` processes (the service does not run group members)"
                .into(),
        );
    }
    // The service's credentials must not reach a bucket a tenant names.
    match &p.checkpoint {
        CheckpointLocation::Dir(dir) => {
            root.place(dir, "checkpoint")?;
        }
        other => {
            return Err(format!(
                "checkpoint {other}: the service keeps checkpoints under its data directory; an object store URL is for `weir run`"
            ));
        }
    }
    // No wildcard arms: a new connector with a path cannot compile until
    // it is placed here.
    for s in &p.sources {
        match s {
            SourceSpec::Log { root: r, topic, .. } => {
                root.place(r, "source path")?;
                root.place_in(r, topic, "source topic")?;
            }
            SourceSpec::Files { dir, .. } => {
                root.place(dir, "source path")?;
            }
            SourceSpec::Rate { .. } => {}
            SourceSpec::Kafka(k) => kafka::kafka(&k.bootstrap_servers, &k.properties, brokers)?,
        }
    }
    for (_, s) in &p.sinks {
        match s {
            SinkSpec::Log { root: r, topic, .. } => {
                root.place(r, "sink path")?;
                root.place_in(r, topic, "sink topic")?;
            }
            SinkSpec::Files { dir, .. } => {
                root.place(dir, "sink path")?;
            }
            SinkSpec::Console => {}
            SinkSpec::Kafka(k) => kafka::kafka(&k.bootstrap_servers, &k.properties, brokers)?,
        }
    }
    if let Some(t) = &p.transform {
        for (dir, _) in &t.sandbox.dirs {
            root.place(dir, "sandbox directory")?;
        }
        if let Some(g) = t.grants.iter().find(|g| !grants.contains(g)) {
            return Err(format!(
                "transform.grants: `{}` is not allowed for this tenant (the admin sets grants per tenant{})",
                g.escape_debug(),
                if grants.is_empty() {
                    String::new()
                } else {
                    format!("; allowed: {}", grants.join(", "))
                }
            ));
        }
    }
    ceilings::check(p, max_memory)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(brokers: &[String]) -> Allowed<'_> {
        Allowed {
            brokers,
            grants: &[],
            max_memory: 1 << 30,
        }
    }

    #[test]
    fn group_pipelines_and_bucket_checkpoints_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = TenantRoot::open(dir.path(), "t").unwrap();
        let base = root.dir();
        let text = |extra: &str, checkpoint: &str| {
            format!(
                "checkpoint = \"{checkpoint}\"\n[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"k:9092\"\ntopics = [\"in\"]\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"k:9092\"\ntopic = \"out\"\n{extra}"
            )
        };
        let brokers = vec!["k:9092".to_string()];
        let p = Pipeline::parse(&text("", "c"), "p.toml", base).unwrap();
        pipeline(&p, &root, &allow(&brokers)).unwrap();
        let p = Pipeline::parse(&text("[group]\nid = \"g\"\n", "c"), "p.toml", base).unwrap();
        let err = pipeline(&p, &root, &allow(&brokers)).unwrap_err();
        assert!(
            err.contains("the service does not run group members"),
            "{err}"
        );
        let p = Pipeline::parse(&text("", "s3://bucket/x"), "p.toml", base).unwrap();
        let err = pipeline(&p, &root, &allow(&brokers)).unwrap_err();
        assert!(
            err.contains("an object store URL is for `weir run`"),
            "{err}"
        );
    }

    #[test]
    fn every_place_of_a_pipeline_is_inside_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = TenantRoot::open(dir.path(), "t").unwrap();
        let base = root.dir();
        let ok = "checkpoint = \"c\"\n[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[sink.default]\ntype = \"files\"\npath = \"out\"\n";
        let p = Pipeline::parse(ok, "p.toml", base).unwrap();
        pipeline(&p, &root, &allow(&[])).unwrap();
        for (from, to) in [
            ("checkpoint = \"c\"", "checkpoint = \"../c\""),
            ("checkpoint = \"c\"", "checkpoint = \"/tmp/c\""),
            ("path = \"log\"", "path = \"../u/log\""),
            ("path = \"out\"", "path = \"/etc\""),
        ] {
            let p = Pipeline::parse(&ok.replace(from, to), "p.toml", base).unwrap();
            let err = pipeline(&p, &root, &allow(&[])).unwrap_err();
            assert!(err.contains("outside the tenant's data"), "{to}: {err}");
        }
    }
}
