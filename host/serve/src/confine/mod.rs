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
use weir_pipeline::spec::{Pipeline, RegistrySpec, SinkSpec, SourceSpec};

/// What a tenant's pipelines are confined by, as the admin set it.
pub struct Allowed<'a> {
    /// Kafka brokers (`host:port`).
    pub brokers: &'a [String],
    /// Interfaces its pipelines may grant their guests.
    pub grants: &'a [String],
    /// The tenant's guest memory quota.
    pub max_memory: u64,
    /// In a cluster, what its pipelines must keep to. Every place must
    /// then be one every node reaches.
    pub cluster: Option<ClusterPlaces<'a>>,
}

/// A cluster's places a tenant's pipeline is held to.
#[derive(Clone, Copy)]
pub struct ClusterPlaces<'a> {
    /// The object-store prefix its checkpoints live under (no `/` at the
    /// end).
    pub checkpoints: &'a str,
    /// The control plane's topic prefix: its topics and consumer groups
    /// (`<prefix>.config`, `<prefix>.nodes`...) are the cluster's own.
    pub control: &'a str,
}

/// Why a place on one machine's disk cannot be used in a cluster.
fn node_local(what: &str) -> String {
    format!(
        "{what}: in cluster mode a pipeline may run on any node, so it reads and writes only what every node reaches (Kafka, the object store); a path is one machine's"
    )
}

/// Every place of `p` inside `root`; every number under its ceiling, every
/// Kafka client and grant within what `allowed` says.
pub fn pipeline(p: &Pipeline, root: &TenantRoot, allowed: &Allowed<'_>) -> Result<(), String> {
    let (brokers, grants, max_memory) = (allowed.brokers, allowed.grants, allowed.max_memory);
    let cluster = allowed.cluster.map(|c| c.checkpoints);
    if let Some(c) = allowed.cluster {
        kafka::clear_of_control_plane(p, c.control)?;
    }
    if p.group.is_some() && cluster.is_none() {
        return Err(
            "[group] pipelines run as `weir run` processes or on a cluster of `weir serve --cluster` nodes (one node does not run group members)"
                .into(),
        );
    }
    // The service's credentials must not reach a bucket a tenant names.
    match (&p.checkpoint, cluster) {
        (CheckpointLocation::Dir(dir), None) => {
            root.place(dir, "checkpoint")?;
        }
        (CheckpointLocation::Url(url), Some(prefix))
            if url
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/') && !rest.contains("..")) => {}
        (other, None) => {
            return Err(format!(
                "checkpoint {other}: the service keeps checkpoints under its data directory; an object store URL is for `weir run`"
            ));
        }
        (other, Some(_)) => {
            return Err(format!(
                "checkpoint {}: in cluster mode the service places checkpoints on its object store",
                root.redact(&other.to_string())
            ));
        }
    }
    // No wildcard arms: a new connector with a path cannot compile until
    // it is placed here.
    for s in &p.sources {
        match s {
            SourceSpec::Log { .. } | SourceSpec::Files { .. } if cluster.is_some() => {
                return Err(node_local("source"));
            }
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
            SinkSpec::Log { .. } | SinkSpec::Files { .. } if cluster.is_some() => {
                return Err(node_local("sink"));
            }
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
            if cluster.is_some() {
                return Err(node_local("transform.sandbox.dirs"));
            }
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
    schemas(p, root, cluster.is_some())?;
    ceilings::check(p, max_memory)
}

/// Schema files come from the tenant's directory; a registry URL would let
/// a tenant make the service send requests wherever it names, so it is
/// refused until the admin can allow registries as it allows brokers.
fn schemas(p: &Pipeline, root: &TenantRoot, cluster: bool) -> Result<(), String> {
    let formats = p.source_formats.iter().chain(&p.sink_formats);
    let files = formats
        .filter_map(|f| f.schema.as_ref())
        .chain(p.registry.iter().flat_map(|r| r.files()));
    for file in files {
        if cluster {
            return Err(node_local("value-schema and registry.schemas"));
        }
        root.place(file, "schema file")?;
    }
    match &p.registry {
        Some(RegistrySpec::Url { .. }) => Err(
            "registry.url: this service does not let a tenant's pipeline call a schema registry; give schema files by id in [registry.schemas] under the tenant's directory".into(),
        ),
        Some(RegistrySpec::Files(_)) | None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(brokers: &[String]) -> Allowed<'_> {
        Allowed {
            brokers,
            grants: &[],
            max_memory: 1 << 30,
            cluster: None,
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
        assert!(err.contains("one node does not run group members"), "{err}");
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

    #[test]
    fn in_a_cluster_only_shared_places_and_the_clusters_checkpoints_pass() {
        let dir = tempfile::tempdir().unwrap();
        let root = TenantRoot::open(dir.path(), "t").unwrap();
        let brokers = vec!["k:9092".to_string()];
        let allowed = Allowed {
            cluster: Some(ClusterPlaces {
                checkpoints: "s3://b/c/checkpoints/t",
                control: "weir",
            }),
            ..allow(&brokers)
        };
        let kafka = "[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"k:9092\"\ntopics = [\"in\"]\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"k:9092\"\ntopic = \"out\"\n";
        let parse = |text: &str| Pipeline::parse(text, "p.toml", root.dir()).unwrap();
        let ok = format!("checkpoint = \"s3://b/c/checkpoints/t/p\"\n{kafka}");
        pipeline(&parse(&ok), &root, &allowed).unwrap();
        let grouped = ok.replace("[[source]]", "[group]\nid = \"g\"\n[[source]]");
        pipeline(&parse(&grouped), &root, &allowed).unwrap();
        let text = grouped.replace("id = \"g\"", "id = \"weir.nodes\"");
        let err = pipeline(&parse(&text), &root, &allowed).unwrap_err();
        assert!(err.contains("the cluster's control plane"), "{err}");
        for checkpoint in [
            "s3://b/c/checkpoints/t2/p",
            "s3://b/c/checkpoints/t/../u/p",
            "s3://other/x",
            "c",
        ] {
            let text = ok.replace("s3://b/c/checkpoints/t/p", checkpoint);
            let err = pipeline(&parse(&text), &root, &allowed).unwrap_err();
            assert!(
                err.contains("places checkpoints on its object store"),
                "{checkpoint}: {err}"
            );
        }
        let files = "checkpoint = \"s3://b/c/checkpoints/t/p\"\n[[source]]\ntype = \"files\"\npath = \"in\"\n[sink.default]\ntype = \"console\"\n";
        let err = pipeline(&parse(files), &root, &allowed).unwrap_err();
        assert!(err.contains("in cluster mode"), "{err}");
        // The control plane's topics and groups are not a tenant's.
        for (from, to) in [
            ("topics = [\"in\"]", "topics = [\"in\", \"weir.config\"]"),
            ("topics = [\"in\"]", "topic-pattern = \"w.*\""),
            ("topic = \"out\"", "topic = \"weir.status\""),
        ] {
            let text = ok.replace(from, to);
            let err = pipeline(&parse(&text), &root, &allowed).unwrap_err();
            assert!(err.contains("the cluster's control plane"), "{to}: {err}");
        }
    }

    #[test]
    fn schema_files_stay_inside_the_tenant_and_registry_urls_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = TenantRoot::open(dir.path(), "t").unwrap();
        let text = |schema: &str, registry: &str| {
            format!(
                "checkpoint = \"c\"\n[[source]]\ntype = \"log\"\npath = \"data\"\ntopic = \"in\"\nvalue-format = \"avro\"\nvalue-schema = \"{schema}\"\n[sink.default]\ntype = \"console\"\n{registry}"
            )
        };
        let files = "[registry.schemas]\n1 = \"v1.avsc\"\n";
        let check = |t: String| {
            let p = Pipeline::parse(&t, "p.toml", root.dir()).unwrap();
            pipeline(&p, &root, &allow(&[]))
        };
        check(text("v1.avsc", files)).unwrap();
        let err = check(text("../../other/v1.avsc", files)).unwrap_err();
        assert!(
            err.contains("schema file") && err.contains("outside"),
            "{err}"
        );
        let err = check(text("v1.avsc", "[registry.schemas]\n1 = \"/etc/passwd\"\n")).unwrap_err();
        assert!(err.contains("outside"), "{err}");
        let err = check(text(
            "v1.avsc",
            "[registry]\nurl = \"http://127.0.0.1:8081\"\n",
        ))
        .unwrap_err();
        assert!(err.contains("registry.url"), "{err}");
    }
}
