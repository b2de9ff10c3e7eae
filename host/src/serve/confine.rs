//! Confinement of a tenant's pipeline: every path it names (checkpoint,
//! embedded-log roots, file directories, sandbox grants) must resolve inside
//! the tenant's own data root, and its transform must be a component the
//! tenant uploaded. `..`, absolute paths and symlinks that lead out are
//! refused. Kafka brokers must be on the tenant's allow-list (set by the
//! admin), and only client properties that name no file, command or other
//! broker pass: librdkafka would otherwise read host files or run programs
//! (`ssl.key.location`, `sasl.kerberos.kinit.cmd`) for a tenant.

use std::path::{Component, Path, PathBuf};

use crate::spec::{Pipeline, SinkSpec, SourceSpec};

/// Check that `path` stays inside `root` (both absolute; `root` exists).
pub fn inside(path: &Path, root: &Path, what: &str) -> Result<(), String> {
    let out = || format!("{what} `{}` is outside the tenant's data", path.display());
    if path.components().any(|c| c == Component::ParentDir) || !path.starts_with(root) {
        return Err(out());
    }
    // Symlinks: the deepest part that exists must resolve inside too.
    let real_root = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
    let mut probe = path.to_path_buf();
    while !probe.exists() {
        if !probe.pop() {
            return Err(out());
        }
    }
    let real = std::fs::canonicalize(&probe).map_err(|e| e.to_string())?;
    if !real.starts_with(&real_root) {
        return Err(out());
    }
    Ok(())
}

/// Every path of `p`, checked against `root`; every Kafka client against
/// `brokers`.
pub fn pipeline(p: &Pipeline, root: &Path, brokers: &[String]) -> Result<(), String> {
    if p.group.is_some() {
        return Err(
            "[group] pipelines run as `weir run` processes (the service does not run group members)"
                .into(),
        );
    }
    // The service's credentials must not reach a bucket a tenant names.
    let Some(checkpoint) = p.checkpoint.dir() else {
        return Err(format!(
            "checkpoint {}: the service keeps checkpoints under its data directory; an object store URL is for `weir run`",
            p.checkpoint
        ));
    };
    inside(checkpoint, root, "checkpoint")?;
    for s in &p.sources {
        match s {
            SourceSpec::Log { root: r, .. } => inside(r, root, "source path")?,
            SourceSpec::Files { dir, .. } => inside(dir, root, "source path")?,
            SourceSpec::Rate { .. } => {}
            SourceSpec::Kafka(k) => kafka(&k.bootstrap_servers, &k.properties, brokers)?,
        }
    }
    for (_, s) in &p.sinks {
        match s {
            SinkSpec::Log { root: r, .. } => inside(r, root, "sink path")?,
            SinkSpec::Files { dir, .. } => inside(dir, root, "sink path")?,
            SinkSpec::Console => {}
            SinkSpec::Kafka(k) => kafka(&k.bootstrap_servers, &k.properties, brokers)?,
        }
    }
    if let Some(t) = &p.transform {
        for (dir, _) in &t.sandbox.dirs {
            inside(dir, root, "sandbox directory")?;
        }
    }
    Ok(())
}

/// Client properties a tenant may set: tuning and credentials, nothing
/// that names a file, a program or another broker.
const KAFKA_PROPERTIES: &[&str] = &[
    "acks",
    "batch.num.messages",
    "batch.size",
    "client.id",
    "compression.codec",
    "compression.type",
    "fetch.max.bytes",
    "fetch.min.bytes",
    "fetch.wait.max.ms",
    "linger.ms",
    "max.partition.fetch.bytes",
    "message.max.bytes",
    "queued.min.messages",
    "request.timeout.ms",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.password",
    "sasl.username",
    "security.protocol",
    "socket.timeout.ms",
];

fn kafka(servers: &str, properties: &[(String, String)], allowed: &[String]) -> Result<(), String> {
    for b in servers.split(',').map(str::trim) {
        if !allowed.iter().any(|a| a.eq_ignore_ascii_case(b)) {
            return Err(if allowed.is_empty() {
                format!(
                    "Kafka broker `{b}`: this tenant may use no Kafka brokers (the admin sets kafka-brokers per tenant)"
                )
            } else {
                format!(
                    "Kafka broker `{b}` is not on this tenant's allow-list ({})",
                    allowed.join(", ")
                )
            });
        }
    }
    for (k, _) in properties {
        if !KAFKA_PROPERTIES.contains(&k.as_str()) {
            return Err(format!(
                "Kafka property `{k}` is not allowed through weir serve (allowed: {})",
                KAFKA_PROPERTIES.join(", ")
            ));
        }
    }
    Ok(())
}

/// A broker address as the allow-list holds it: `host:port`.
pub fn broker_address(b: &str) -> Result<(), String> {
    let ok = b.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && port.parse::<u16>().is_ok()
            && host
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b".-[]:".contains(&c))
    });
    if ok {
        Ok(())
    } else {
        Err(format!("kafka-brokers: `{b}` is not host:port"))
    }
}

/// A tenant's data root under the service's data directory.
pub fn tenant_root(data: &Path, tenant: &str) -> PathBuf {
    data.join("tenants").join(tenant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        std::fs::create_dir_all(root.join("data")).unwrap();
        inside(&root.join("data/x/y"), &root, "p").unwrap();
        for bad in [
            root.join("../other"),
            dir.path().join("elsewhere"),
            PathBuf::from("/etc"),
        ] {
            let err = inside(&bad, &root, "p").unwrap_err();
            assert!(err.contains("outside the tenant's data"), "{err}");
        }
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        assert!(inside(&root.join("link/secret"), &root, "p").is_err());
    }

    #[test]
    fn group_pipelines_and_bucket_checkpoints_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let text = |extra: &str, checkpoint: &str| {
            format!(
                "checkpoint = \"{checkpoint}\"\n[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"k:9092\"\ntopics = [\"in\"]\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"k:9092\"\ntopic = \"out\"\n{extra}"
            )
        };
        let brokers = vec!["k:9092".to_string()];
        let p = Pipeline::parse(&text("", "c"), "p.toml", base).unwrap();
        pipeline(&p, base, &brokers).unwrap();
        let p = Pipeline::parse(&text("[group]\nid = \"g\"\n", "c"), "p.toml", base).unwrap();
        let err = pipeline(&p, base, &brokers).unwrap_err();
        assert!(
            err.contains("the service does not run group members"),
            "{err}"
        );
        let p = Pipeline::parse(&text("", "s3://bucket/x"), "p.toml", base).unwrap();
        let err = pipeline(&p, base, &brokers).unwrap_err();
        assert!(
            err.contains("an object store URL is for `weir run`"),
            "{err}"
        );
    }

    #[test]
    fn kafka_needs_allowed_brokers_and_harmless_properties() {
        let allowed = vec!["kafka-1:9092".to_string(), "kafka-2:9092".to_string()];
        kafka("kafka-1:9092, KAFKA-2:9092", &[], &allowed).unwrap();
        let prop = |k: &str| vec![(k.to_string(), "x".to_string())];
        kafka("kafka-1:9092", &prop("linger.ms"), &allowed).unwrap();
        let err = kafka("kafka-1:9092,evil:9092", &[], &allowed).unwrap_err();
        assert!(err.contains("`evil:9092` is not on"), "{err}");
        let err = kafka("kafka-1:9092", &[], &[]).unwrap_err();
        assert!(err.contains("may use no Kafka brokers"), "{err}");
        for bad in [
            "ssl.key.location",
            "sasl.kerberos.kinit.cmd",
            "bootstrap.servers",
            "plugin.library.paths",
        ] {
            let err = kafka("kafka-1:9092", &prop(bad), &allowed).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
        broker_address("localhost:9092").unwrap();
        assert!(broker_address("localhost").is_err());
        assert!(broker_address("a b:1").is_err());
    }
}
