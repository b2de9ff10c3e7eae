//! Kafka clients of a served pipeline: brokers from the tenant's
//! allow-list (set by the admin), and only client properties that name no
//! file, command or other broker, since librdkafka would otherwise read
//! host files or run programs (`ssl.key.location`,
//! `sasl.kerberos.kinit.cmd`) for a tenant.

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

pub(super) fn kafka(
    servers: &str,
    properties: &[(String, String)],
    allowed: &[String],
) -> Result<(), String> {
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

/// Refuse a pipeline that would read or write the cluster's control
/// plane (its topics carry token hashes and every tenant's rows; writing
/// one would forge them) or join its groups (the nodes' group hands out
/// slots), whichever broker it names.
pub(super) fn clear_of_control_plane(
    p: &weir_pipeline::spec::Pipeline,
    prefix: &str,
) -> Result<(), String> {
    use weir_connectors::kafka::KafkaTopics;
    use weir_pipeline::spec::{SinkSpec, SourceSpec};
    let ours = |name: &str| name.starts_with(&format!("{prefix}."));
    let refuse = |what: &str, name: &str| {
        Err(format!(
            "{what} `{}`: names beginning `{prefix}.` belong to the cluster's control plane",
            name.escape_debug()
        ))
    };
    let control = ["config", "status", "slots"].map(|t| format!("{prefix}.{t}"));
    for s in &p.sources {
        let SourceSpec::Kafka(k) = s else { continue };
        match &k.topics {
            KafkaTopics::List(topics) => {
                if let Some(t) = topics.iter().find(|t| ours(t)) {
                    return refuse("source topic", t);
                }
            }
            KafkaTopics::Pattern(pattern) => {
                let re =
                    regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| e.to_string())?;
                if let Some(t) = control.iter().find(|t| re.is_match(t)) {
                    return refuse("source topic-pattern matches", t);
                }
            }
        }
    }
    for (_, s) in &p.sinks {
        if let SinkSpec::Kafka(k) = s
            && ours(&k.topic)
        {
            return refuse("sink topic", &k.topic);
        }
    }
    if let Some(g) = &p.group
        && ours(&g.id)
    {
        return refuse("group.id", &g.id);
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

#[cfg(test)]
mod tests {
    use super::*;

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
